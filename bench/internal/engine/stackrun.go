package engine

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"wsgilab/bench/internal/report"
	"wsgilab/bench/internal/verdict"
)

// Step states as report.StackStep names them.
const (
	StateHeld   = "held"
	StateBroken = "broken"
	StateNoData = "no data"
)

// NoDataWhy says why a step has no data: its unmeasured runs' reasons, or
// that its sound runs split evenly.
func NoDataWhy(s report.Condition, unsound []string) string {
	if len(unsound) > 0 {
		return "the lab could not measure " + strings.Join(unsound, "; ")
	}
	return fmt.Sprintf("its %d sound runs split evenly between held and broken", s.RunsSound)
}

// MaxStepRuns bounds a step's runs: one that held decides; one that broke
// needs a second that breaks (verdict.Step), a tie or an unsound run a
// third.
const MaxStepRuns = 3

// StepOf is a step's report from its condition's summary.
func StepOf(s report.Condition, n int, bound float64) report.StackStep {
	step := report.StackStep{Clients: n, Condition: s.ID, P95Ms: s.P95Ms, P95MsRuns: s.P95MsRuns, RunsSound: s.RunsSound, RunsTotal: s.RunsTotal}
	state, _, err := verdict.Step(s, bound)
	switch {
	case errors.Is(err, verdict.ErrNoStepData) || state == verdict.StepUndecided:
		step.State = StateNoData
	case state == verdict.StepHeld:
		step.State = StateHeld
	default:
		step.State = StateBroken
	}
	var failed []string
	if f := s.RequestsTotal - s.RequestsOK; f > 0 {
		failed = append(failed, fmt.Sprintf("%d of %d fast requests failed", f, s.RequestsTotal))
	}
	if f := s.RequestsTotalH2 - s.RequestsOKH2; f > 0 {
		failed = append(failed, fmt.Sprintf("%d of %d fast requests over HTTP/2 failed", f, s.RequestsTotalH2))
	}
	if f := s.DownloadsTotal - s.DownloadsComplete; f > 0 {
		what := "slow clients"
		if s.Records > 0 {
			what = "slow clients' streams" // an HTTP/2 client's, one record each
		}
		failed = append(failed, fmt.Sprintf("%d of %d %s not served", f, s.DownloadsTotal, what))
	}
	step.Failed = strings.Join(failed, "; ")
	return step
}

// FoldStack completes st from its requirements' claims (one per
// behaviour, in order) and its resets (FoldReset's): what held, where it
// stalled, PASS or FAIL, and the advice from m.
func FoldStack(st report.Stack, claims []report.Claim, m *report.Matrix) report.Stack {
	st.Pass = len(st.Behaviours) > 0
	for i := range st.Behaviours {
		b := &st.Behaviours[i]
		b.HeldUpTo = -1
		if i < len(claims) && claims[i].Evaluated {
			b.HeldUpTo, b.Pass = int(claims[i].Measured), claims[i].Holds
		} else {
			b.NoData = true
		}
		// The first step (ascending) that did not hold: where it stalls,
		// or where the lab could not tell. Not the last step run: the
		// required one runs first and may have broken above it.
		first := slices.IndexFunc(b.Steps, func(s report.StackStep) bool { return s.State != StateHeld })
		if first >= 0 {
			b.StallsAt = b.Steps[first].Clients
		}
		base := st.Baseline
		if b.Baseline != nil { // its own path's (slow TLS: over TLS)
			base = *b.Baseline
		}
		switch {
		case base.State == StateNoData:
			b.Text = "no data: the lab could not measure the baseline, with no slow client: " + base.Why
		case base.State != StateHeld && b.Baseline != nil:
			b.Text = fmt.Sprintf("the fast path breaks %g ms on %s with no slow client", st.FastP95Ms, b.Path)
		case base.State != StateHeld:
			b.Text = fmt.Sprintf("the fast path breaks %g ms with no slow client", st.FastP95Ms)
		case first >= 0 && b.Steps[first].State == StateNoData:
			b.Text = fmt.Sprintf("no data at %d %s: %s", b.StallsAt, b.Noun, b.Steps[first].Why)
		case b.StallsAt > b.Required:
			b.Text = fmt.Sprintf("stalls at %d %s, past the %d required", b.StallsAt, b.Noun, b.Required)
		case b.StallsAt > 0:
			b.Text = fmt.Sprintf("stalls at %d %s", b.StallsAt, b.Noun)
		default:
			b.Text = fmt.Sprintf("none up to %d %s", b.Steps[len(b.Steps)-1].Clients, b.Noun)
		}
		st.Pass = st.Pass && b.Pass
	}
	for _, r := range st.Resets {
		st.Pass = st.Pass && r.Pass
	}
	st.Advice = StackAdvice(st, m)
	return st
}

// FoldReset completes r from its verdicts' claims (ResetVerdicts): Pass
// when every one held; no data when notRun says why its step never ran
// (the baseline did not hold), when no run of it was measured whole
// (unsound: its runs' reasons), when the hop did not cut every client
// where it cuts (the cut, judged first), or when a verdict had nothing
// to read; else what the cut left held, in words.
func FoldReset(stack string, r report.StackReset, claims []report.Claim, bound float64, notRun string, unsound []string) report.StackReset {
	r.Pass, r.NoData = false, true
	what := fmt.Sprintf("%d %s cut at 4 MiB", r.Clients, r.Noun)
	byEnd := map[string]report.Claim{}
	for _, c := range claims {
		byEnd[strings.TrimPrefix(c.ID, verdict.StackCutBase(stack, r.Column))] = c
	}
	cut, ok := byEnd["-cut"]
	switch {
	case notRun != "":
		r.Text = "not run: " + notRun
		return r
	case r.RunsSound == 0 || r.Cut == nil:
		r.Text = "no data: no run of " + what + " was measured whole"
		if len(unsound) > 0 {
			r.Text += " (" + strings.Join(unsound, "; ") + ")"
		}
		return r
	case !ok || !cut.Evaluated:
		r.Text = "no data: nothing to judge the cut by"
		return r
	case !cut.Holds:
		r.Text = fmt.Sprintf("no data: the hop cut %d of %d %s at 4 MiB (they moved %d to %d bytes): the step is not the fault it is about",
			r.Cut.AtCut, r.Cut.Clients, r.Noun, r.Cut.BytesMin, r.Cut.BytesMax)
		return r
	}
	var kept, unjudged []string
	for _, c := range claims {
		end := strings.TrimPrefix(c.ID, verdict.StackCutBase(stack, r.Column)+"-")
		switch {
		case c.ID == cut.ID:
		case !c.Evaluated:
			unjudged = append(unjudged, end)
		case !c.Holds:
			kept = append(kept, resetProblem(end, c, bound))
		}
	}
	switch {
	case len(kept) > 0:
		r.NoData, r.Text = false, "keeps hold after "+what+": "+strings.Join(kept, "; ")
	case len(unjudged) > 0:
		r.Text = "no data: nothing to judge " + strings.Join(unjudged, ", ") + " by"
	default:
		r.Pass, r.NoData = true, false
		r.Text = fmt.Sprintf("lets go of %s: the next %d fast requests served, p95 %s ms; no descriptor left", what, r.Cut.FastAfter, report.MsText(r.Cut.FastAfterP95Ms))
		if _, ok := byEnd["-no-temp-left"]; ok { // only where the temp files were judged
			r.Text += " nor temp file"
		}
	}
	return r
}

// resetProblem says what a reset verdict that failed measured.
func resetProblem(end string, c report.Claim, bound float64) string {
	switch end {
	case "next-served":
		return fmt.Sprintf("%g fast requests after the cut failed", c.Measured)
	case "next-not-held":
		return fmt.Sprintf("the fast path's p95 after the cut %s ms, over its %g ms bound", report.MsText(c.Measured), bound)
	case "no-fd-leak":
		return fmt.Sprintf("the app held %g descriptors more at the end than before the load", c.Measured)
	case "no-proxy-fd-leak":
		return fmt.Sprintf("the front door held %g descriptors more at the end than before the load", c.Measured)
	case "no-temp-left":
		return fmt.Sprintf("NGINX held %g temp files at the end", c.Measured)
	}
	return c.ID + " fails"
}
