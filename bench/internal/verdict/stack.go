package verdict

import (
	"errors"
	"fmt"

	"wsgilab/bench/internal/report"
)

// A stack check (a team's stack file, package stackfile) steps the number
// of concurrent slow clients of each behaviour it requires as a bracket:
// the baseline (0), then the required step; past it the next step when it
// held, below it the steps from the first up to the first that broke when
// it did not. The functions here decide a step and a requirement from the
// steps' condition summaries, for the engine's stepping and for the
// claims.

// StepState is what a step's runs say.
type StepState int

const (
	// StepHeld: most of the step's sound runs served every /fast request
	// and slow client, with /fast p95 within the bound.
	StepHeld StepState = iota
	// StepBroken: most of them failed something or went over the bound.
	StepBroken
	// StepUndecided: as many held as broke; one more run decides.
	StepUndecided
)

// ErrNoStepData is a step with no sound run: the lab could not measure it.
var ErrNoStepData = errors.New("no sound run")

// Step decides a step on its condition summary s against boundMs: each
// sound run either held (valid, p95 within the bound) or broke (a /fast
// request or a slow client failed, or p95 over the bound); the majority
// decides, but a step is broken only on two sound runs at least: one run
// that broke alone is undecided, so one noisy run never fails a stack.
// measured is the median p95 of its valid runs (0 when none).
func Step(s report.Condition, boundMs float64) (state StepState, measured float64, err error) {
	if s.RunsSound == 0 {
		return StepBroken, 0, ErrNoStepData
	}
	held := 0
	for _, p := range s.P95MsRuns {
		if p <= boundMs {
			held++
		}
	}
	broke := s.RunsSound - held
	switch {
	case held > broke:
		return StepHeld, s.P95Ms, nil
	case broke > held && broke >= 2:
		return StepBroken, s.P95Ms, nil
	}
	return StepUndecided, s.P95Ms, nil
}

// StackRequirement holds when the fast path held its bound at every step
// from baseline (0 slow clients) up to required slow clients: steps[i] is
// the condition of clients[i] clients, ascending (one at a time, then
// geometric: stackfile.Steps). A step that did not run below one that held
// held too: one more slow client never frees a worker, so the check runs
// the required step first and the steps below it only when it did not
// hold (labrun's RunStack). Steps past the first broken one are never run,
// and need not be; a step up to the requirement that did not run with no
// step above it held, or one without a sound run or still undecided, is
// missing data. The measured value is the most slow clients under which
// it held, run or implied (-1 when even the baseline broke): with the
// first broken step, the bracket.
func StackRequirement(baseline string, steps []string, clients []int, required int, boundMs float64) Check {
	return stackReq{baseline, steps, clients, required, boundMs}
}

type stackReq struct {
	baseline string
	steps    []string
	clients  []int
	required int
	bound    float64
}

func (r stackReq) Needs() []string { return []string{r.baseline} }

func (r stackReq) Eval(d Data) (Outcome, error) {
	th := fmt.Sprintf(">= %d (fast p95 <= %g ms and nothing failed at every step up to it)", r.required, r.bound)
	if len(r.steps) != len(r.clients) {
		return Outcome{}, fmt.Errorf("%d steps for %d client counts", len(r.steps), len(r.clients))
	}
	ids := append([]string{r.baseline}, r.steps...)
	clients := append([]int{0}, r.clients...)
	// held is the most clients held so far; gap the first step not run
	// since, which a step held above it implies.
	held, gap := -1, -1
	for i, id := range ids {
		n := clients[i]
		s, ok := d.Conditions[id]
		if !ok {
			if n > r.required {
				break // stepping may stop past the requirement
			}
			if gap < 0 {
				gap = n
			}
			continue
		}
		state, _, err := Step(s, r.bound)
		if n > r.required && (err != nil || state == StepUndecided) {
			break // the step past the requirement only bounds it
		}
		if err != nil {
			return Outcome{}, fmt.Errorf("step %d (%s): %w", n, id, err)
		}
		if state == StepUndecided {
			return Outcome{}, fmt.Errorf("step %d (%s): as many runs held as broke", n, id)
		}
		if state == StepBroken {
			break
		}
		held, gap = n, -1
	}
	// A gap with a broken step above it is missing data too, not a
	// failure: the requirement failed, but where it stalls is unknown
	// (the bracket always runs the steps below a broken one; a gap there
	// is a check cut short).
	if gap >= 0 {
		return Outcome{}, fmt.Errorf("step %d did not run, and no step above it held", gap)
	}
	return Outcome{Measured: float64(held), Threshold: th, Holds: held >= r.required}, nil
}
