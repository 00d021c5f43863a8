package engine

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"time"
	"wsgilab/bench/internal/runrec"

	"wsgilab/bench/internal/report"
	"wsgilab/bench/internal/safety"
	"wsgilab/bench/internal/verdict"
)

// Reports accumulate a series' runs and write its report set. Each run's
// rows are appended to the JSON-lines files once (requests.jsonl and the
// sampler's four), and its raw record written, as the run is added; the
// summary files (conditions.json, runs.json and the rest, each a whole of
// the series so far) are rewritten by Flush, once per condition and at
// the series' end, so the writes grow with the series, not with its
// square. An interrupted series flushes as it stops (the session's
// guard); what it ran is in its raw records and its journal either way.
type Reports struct {
	dir string
	// Env is environment.json; it is written with the series, never by a
	// process that ran nothing (make image).
	Env *report.Environment

	mu         sync.Mutex
	started    time.Time
	conditions []Condition               // every condition that has runs, in first-run order
	ranOn      map[string]*report.Origin // a merged series' shard per condition
	runs       []report.Run
	downloads  []report.Download
	throughput []report.Throughput
	attempted  []string                  // every condition and cell started
	claims     map[string][]report.Claim // by table: "a", "b"
	stacks     []report.Stack
	checks     []StackCheck // the stack checks begun, for matrix.json
	wrote      bool
	// appended are the JSON-lines files this Reports has begun: its first
	// append to each starts the file afresh.
	appended map[string]bool
	// dirty is set by a run added since the summary files were written.
	dirty bool
}

// NewReports writes into dir.
func NewReports(dir string, env *report.Environment) *Reports {
	return &Reports{dir: dir, Env: env, claims: map[string][]report.Claim{}, appended: map[string]bool{}}
}

// Dir is the report directory.
func (r *Reports) Dir() string { return r.dir }

// Wrote is whether any series wrote reports.
func (r *Reports) Wrote() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.wrote
}

// begin marks the series' start at its first run, whoever starts it (a
// test, a benchmark or a command), and records that id was attempted, so a
// condition that fails before its first row still counts as run.
func (r *Reports) Begin(id string) {
	r.mu.Lock()
	if r.started.IsZero() {
		r.started = time.Now()
	}
	if !slices.Contains(r.attempted, id) {
		r.attempted = append(r.attempted, id)
	}
	if sh := &r.Env.Shard; slices.Contains(sh.Conditions, id) && !slices.Contains(sh.Attempted, id) {
		sh.Attempted = append(sh.Attempted, id)
	}
	r.mu.Unlock()
}

var articleFigures = func() map[string]report.ArticleValue {
	v, err := report.ArticleA()
	if err != nil {
		panic(err) // an embedded fixture that does not decode is a broken build
	}
	return v
}()

// attemptA lists c among the series' conditions before its first run, so
// a condition whose runs all fail shows in the summaries with no valid run.
func (r *Reports) AttemptA(c Condition) {
	r.mu.Lock()
	if !slices.ContainsFunc(r.conditions, func(x Condition) bool { return x.ID == c.ID }) {
		r.conditions = append(r.conditions, c)
	}
	r.mu.Unlock()
}

// AddRun summarizes rec, a run of c, writes its raw record and appends
// its rows; Flush writes the summaries.
func (r *Reports) AddRun(c Condition, rec Record) (report.Run, error) {
	return r.addRun(c, rec)
}

// addRun summarizes rec, a run of c, writes its raw record and appends
// its rows to the JSON-lines files.
func (r *Reports) addRun(c Condition, rec Record) (report.Run, error) {
	if rec.WallS == 0 { // set already in a run kept from the journal
		rec.WallS = time.Since(rec.Started).Seconds() // the pod's teardown follows; series.json counts it
	}
	rows := SummarizeRun(c, rec)
	rows.Run.WallS = rec.WallS
	raw := RawA(c, rec.Run)
	rawErr := report.WriteFile(filepath.Join(r.dir, filepath.Dir(raw)), filepath.Base(raw), report.JSON(rec))
	r.mu.Lock()
	r.runs = append(r.runs, rows.Run)
	r.downloads = append(r.downloads, rows.Downloads...)
	r.dirty, r.wrote = true, true
	err := errors.Join(rawErr, r.appendLocked("requests.jsonl", report.JSONLines(rows.Requests)), r.appendSampledLocked(rows.Sampler))
	r.mu.Unlock()
	return rows.Run, err
}

// appendLocked appends rep's lines to the JSON-lines file name, starting
// it afresh at this Reports' first append. r.mu is held.
func (r *Reports) appendLocked(name string, rep report.Reporter) error {
	fresh := !r.appended[name]
	r.appended[name] = true
	return report.AppendFile(r.dir, name, rep, fresh)
}

// appendSampledLocked appends the sampler's rows to its four files. r.mu
// is held.
func (r *Reports) appendSampledLocked(rows report.ProbeRows) error {
	return errors.Join(
		r.appendLocked("resources.jsonl", report.JSONLines(rows.Resources)),
		r.appendLocked("sockets.jsonl", report.JSONLines(rows.Sockets)),
		r.appendLocked("waits.jsonl", report.JSONLines(rows.Waits)),
		r.appendLocked("tempfiles.jsonl", report.JSONLines(rows.TempFiles)),
	)
}

// rawA is run k of c's raw record, relative to the report directory.
func RawA(c Condition, k int) string { return rawRun(c.ID, k) }

// rawRun is run k of condition id's raw record, relative to the report
// directory.
func rawRun(id string, k int) string {
	return filepath.Join("raw", fmt.Sprintf("%s-run%d.json", id, k))
}

// Runs are the series' runs of condition id so far, in the order they
// were added.
func (r *Reports) Runs(id string) []report.Run {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []report.Run
	for _, run := range r.runs {
		if run.Condition == id {
			out = append(out, run)
		}
	}
	return out
}

// Condition is condition id's summary, and whether it has runs.
func (r *Reports) Condition(id string) (report.Condition, bool) {
	all := r.Conditions()
	if i := slices.IndexFunc(all, func(c report.Condition) bool { return c.ID == id }); i >= 0 {
		return all[i], true
	}
	return report.Condition{}, false
}

// Conditions summarizes every condition that has runs.
func (r *Reports) Conditions() []report.Condition {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.conditionsLocked()
}

func (r *Reports) conditionsLocked() []report.Condition {
	out := []report.Condition{}
	for _, c := range r.conditions {
		var runs []report.Run
		for _, run := range r.runs {
			if run.Condition == c.ID {
				runs = append(runs, run)
			}
		}
		sum := SummarizeCondition(c, runs, articleFigures[c.Ref])
		sum.RanOn = r.ranOn[c.ID]
		out = append(out, sum)
	}
	return out
}

// Evaluate judges the verdicts of table ("a", "sweep", "matrix", "b") on everything measured
// so far and rewrites claims.json.
func (r *Reports) Evaluate(table string, vs []verdict.Verdict) ([]report.Claim, error) {
	r.mu.Lock()
	d := verdict.Data{Conditions: map[string]report.Condition{}, Throughput: slices.Clone(r.throughput),
		Attempted: slices.Clone(r.attempted), TooBusy: TooBusyByCondition(r.Env.Safety.TooBusy)}
	conds := r.conditionsLocked()
	for _, c := range conds {
		d.Conditions[c.ID] = c
	}
	d.Sweep, d.Exhaustion = FitSweep(conds), FitExhaustion(conds)
	claims := verdict.Evaluate(vs, d)
	r.claims[table] = claims
	r.mu.Unlock()
	return claims, r.writeClaims()
}

// TooBusyByCondition maps each condition of tbs to why the machine was
// too busy for it, for verdict.Data.
func TooBusyByCondition(tbs []report.TooBusy) map[string]string {
	out := map[string]string{}
	for _, tb := range tbs {
		if _, ok := out[tb.Condition]; !ok {
			out[tb.Condition] = fmt.Sprintf("%s: %d attempts, each disturbed (the last: %s)", tb.Unit, tb.Attempts, tb.Last)
		}
	}
	return out
}

// Claims are the claims of verdict table id as last evaluated, nil when
// it was not.
func (r *Reports) Claims(table string) []report.Claim {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.claims[table])
}

// AddThroughput records one of article B's rows.
func (r *Reports) AddThroughput(row report.Throughput, sampled report.ProbeRows) error {
	r.mu.Lock()
	r.throughput = append(r.throughput, row)
	appendErr := r.appendSampledLocked(sampled)
	rows := slices.Clone(r.throughput)
	r.wrote = true
	r.mu.Unlock()
	return errors.Join(appendErr,
		report.WriteFile(r.dir, "throughput.json", report.JSON(rows)),
		report.WriteFile(r.dir, "article_b.bench.txt", report.BenchfmtB(*r.Env, rows)),
		r.writeEnv(),
	)
}

// Flush rewrites article A's summary files from every run added so far:
// conditions.json, runs.json, downloads.json, series.json,
// article_a.bench.txt, and sweep.json, exhaustion.json and matrix.json when
// the series has them. The series calls it once per condition and at its end (Close);
// it does nothing when no run came since the last.
func (r *Reports) Flush() error {
	r.mu.Lock()
	if !r.dirty {
		r.mu.Unlock()
		return nil
	}
	r.dirty = false
	runs := slices.Clone(r.runs)
	conds := r.conditionsLocked()
	files := []struct {
		name string
		rep  report.Reporter
	}{
		{"conditions.json", report.JSON(conds)},
		{"runs.json", report.JSON(runs)},
		{"downloads.json", report.JSON(slices.Clone(r.downloads))},
		{"series.json", report.JSON(report.NewSeries(r.started, runs))},
		{"article_a.bench.txt", report.Benchfmt(*r.Env, runs)},
	}
	if sw := FitSweep(conds); sw != nil {
		files = append(files, struct {
			name string
			rep  report.Reporter
		}{"sweep.json", report.JSON(sw)})
	}
	if l := FitExhaustion(conds); l != nil {
		files = append(files, struct {
			name string
			rep  report.Reporter
		}{"exhaustion.json", report.JSON(l)})
	}
	if m := BuildMatrix(conds, runs, r.downloads, r.checks...); m != nil {
		files = append(files, struct {
			name string
			rep  report.Reporter
		}{"matrix.json", report.JSON(m)})
	}
	r.wrote = true
	r.mu.Unlock()
	for _, f := range files {
		if err := report.WriteFile(r.dir, f.name, f.rep); err != nil {
			return err
		}
	}
	return r.writeEnv()
}

// writeClaims writes claims.json: the article claims, the lab's own,
// then the harness checks, each kind table by table in VerdictTables'
// order, the stack checks' table before article B's.
func (r *Reports) writeClaims() error {
	r.mu.Lock()
	all := []report.Claim{}
	for _, kind := range []verdict.Kind{verdict.Article, verdict.Lab, verdict.Harness} {
		for _, t := range ClaimTables() {
			for _, c := range r.claims[t] {
				if c.Kind == string(kind) {
					all = append(all, c)
				}
			}
		}
	}
	r.wrote = true
	r.mu.Unlock()
	return report.WriteFile(r.dir, "claims.json", report.JSON(all))
}

// AddStack records a stack check's verdict and rewrites stacks.json.
func (r *Reports) AddStack(st report.Stack) error {
	r.mu.Lock()
	r.stacks = append(r.stacks, st)
	all := slices.Clone(r.stacks)
	r.wrote = true
	r.mu.Unlock()
	return report.WriteFile(r.dir, "stacks.json", report.JSON(all))
}

// AddStackEnv records a stack check about to run: its file and images
// for environment.json, and the check itself, whose steps matrix.json
// shows as a row.
func (r *Reports) AddStackEnv(e report.StackEnv, sc StackCheck) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Env.Stacks = append(r.Env.Stacks, e)
	r.checks = append(r.checks, sc)
}

// StackVerdicts are the requirements of every stack check of the series,
// sc's among them.
func (r *Reports) StackVerdicts(sc StackCheck) []verdict.Verdict {
	r.mu.Lock()
	defer r.mu.Unlock()
	var vs []verdict.Verdict
	seen := false
	for _, c := range r.checks {
		vs = append(vs, c.Verdicts()...)
		seen = seen || c.File.Name == sc.File.Name
	}
	if !seen {
		vs = append(vs, sc.Verdicts()...)
	}
	return vs
}

// writeEnv writes environment.json.
func (r *Reports) writeEnv() error {
	r.mu.Lock()
	env := *r.Env
	r.mu.Unlock()
	return report.WriteFile(r.dir, "environment.json", report.JSON(env))
}

// AddAbort records a unit the safety stop or the redo rule discarded, in
// environment.json's safety record, at once.
func (r *Reports) AddAbort(a report.Abort) error {
	return r.addSafety(func(s *report.Safety) { s.Aborts = append(s.Aborts, a) })
}

// addSafety changes environment.json's safety record and writes it.
func (r *Reports) addSafety(change func(*report.Safety)) error {
	r.mu.Lock()
	change(&r.Env.Safety)
	r.wrote = true
	r.mu.Unlock()
	return r.writeEnv()
}

// AddDiscarded writes the raw record of a run the redo rule discarded,
// attempt n of run rec.Run of the unit named name (a condition's id, or
// a pod's own name), beside the kept runs' records, and returns its path
// relative to the report directory: a discarded run is never summarized,
// but nothing it measured is lost.
func (r *Reports) AddDiscarded(name string, rec Record, n int) (string, error) {
	raw := filepath.Join("raw", "discarded", fmt.Sprintf("%s-run%d-attempt%d.json", name, rec.Run, n))
	return raw, report.WriteFile(filepath.Join(r.dir, filepath.Dir(raw)), filepath.Base(raw), report.JSON(rec))
}

// AddTooBusy records a unit the series gave up on, at once: every verdict
// that reads its condition says "machine too busy" instead of judging.
func (r *Reports) AddTooBusy(tb report.TooBusy) error {
	return r.addSafety(func(s *report.Safety) { s.TooBusy = append(s.TooBusy, tb) })
}

// Aborts are the units the safety stop discarded so far.
func (r *Reports) Aborts() []report.Abort {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.Env.Safety.Aborts)
}

// SetSafety records the safety stop's summary of the series in
// environment.json, beside the aborts AddAbort recorded.
func (r *Reports) SetSafety(s safety.Summary) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := &r.Env.Safety
	e.Samples, e.MaxShare, e.MeanShare, e.ReadError = s.Samples, s.MaxShare, s.MeanShare, s.ReadError
}

// SetKept records the journalled units this series kept instead of
// running them.
func (r *Reports) SetKept(kept []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Env.Resume.Kept, r.Env.Resume.Resumed = kept, len(kept) > 0
}

// Close flushes the summary files and writes environment.json once more
// (tests may have added to it) when the series wrote anything at all.
func (r *Reports) Close() error {
	if !r.Wrote() {
		return nil
	}
	return errors.Join(r.Flush(), r.writeEnv())
}

// Record is a run's raw record (runrec.Record); Phases where its wall
// time went outside its window.
type (
	Record      = runrec.Record
	Phases      = runrec.Phases
	HostSamples = runrec.HostSamples
)
