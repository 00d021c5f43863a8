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
// behaviour, in order): what held, where it stalled, PASS or FAIL, and the
// advice from m.
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
	st.Advice = StackAdvice(st, m)
	return st
}
