package engine

import (
	"slices"

	"wsgilab/bench/internal/report"
	"wsgilab/bench/internal/verdict"
)

// Settled reports whether condition id may stop before its planned runs:
// every verdict of the series' tables that reads it holds however the
// runs still missing fall, its own and those of every condition the
// verdict reads (verdict.HoldsWhatever). planned is each condition's runs
// in the series (Plan.Planned), runs LAB_RUNS: a figure of every run (no
// temp file in any) reads that many of a condition that takes more for
// its medians' sake (Condition.MinRuns), as it reads every run of the
// others. It says which verdicts it read; a condition no verdict reads
// never settles.
func (r *Reports) Settled(id string, planned map[string]int, runs int) (bool, []string) {
	vs := verdictsReading(id, planned)
	var read []string
	for _, v := range vs {
		if !verdict.HoldsWhatever(v, r.runsSoFar(v.Check.Needs(), planned, runs)) {
			return false, nil
		}
		read = append(read, v.ID)
	}
	return len(read) > 0, read
}

// MaySettle is whether Settled can ever say yes for condition id before
// its planned runs are in: every verdict that reads it may
// (verdict.MaySettle), or reads a figure of every run of conditions that
// each take runs past LAB_RUNS, runs (verdict.MaySettleEvery). The series
// uses it to open the right pod ahead.
func MaySettle(id string, planned map[string]int, runs int) bool {
	vs := verdictsReading(id, planned)
	may := func(v verdict.Verdict) bool {
		if verdict.MaySettle(v) {
			return true
		}
		// A figure of every run reads runs of each; past them, none.
		withExtra := func(n string) bool { return planned[n] > runs }
		return verdict.MaySettleEvery(v) && !slices.ContainsFunc(v.Check.Needs(), func(n string) bool { return !withExtra(n) })
	}
	return len(vs) > 0 && !slices.ContainsFunc(vs, func(v verdict.Verdict) bool { return !may(v) })
}

// verdictsReading are the verdicts of the series' tables that read
// condition id and are judged under planned: one that reads a condition
// the series does not plan is never judged, and does not count.
func verdictsReading(id string, planned map[string]int) []verdict.Verdict {
	var out []verdict.Verdict
	for _, t := range VerdictTables() {
		for _, v := range t.Verdicts {
			needs := v.Check.Needs()
			if slices.Contains(needs, id) && !slices.ContainsFunc(needs, func(n string) bool { return planned[n] == 0 }) {
				out = append(out, v)
			}
		}
	}
	return out
}

// runsSoFar are the conditions' runs so far, each summarized alone (only
// the valid and sound ones, as a summary counts them), how many more each
// may take of its planned runs, and how many of its planned runs are past
// runs (LAB_RUNS).
func (r *Reports) runsSoFar(ids []string, planned map[string]int, runs int) map[string]verdict.Runs {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]verdict.Runs{}
	for _, id := range ids {
		i := slices.IndexFunc(r.conditions, func(c Condition) bool { return c.ID == id })
		if i < 0 {
			continue
		}
		var rs verdict.Runs
		taken := 0
		for _, run := range r.runs {
			if run.Condition != id {
				continue
			}
			taken++
			if run.Valid && run.Sound {
				rs.Each = append(rs.Each, SummarizeCondition(r.conditions[i], []report.Run{run}, report.ArticleValue{}))
			}
		}
		rs.Left = max(0, planned[id]-taken)
		rs.Extra = max(0, planned[id]-runs)
		out[id] = rs
	}
	return out
}
