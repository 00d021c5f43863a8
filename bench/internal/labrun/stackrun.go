package labrun

import (
	"context"
	"fmt"
	"slices"
	"time"

	"wsgilab/bench/internal/engine"
	"wsgilab/bench/internal/image"
	"wsgilab/bench/internal/proxy"
	"wsgilab/bench/internal/report"
	"wsgilab/bench/internal/stack"
	"wsgilab/bench/internal/stackfile"
	"wsgilab/bench/internal/verdict"
)

// RunStack runs sc's check: its baseline (no slow client), then each
// behaviour's steps as a bracket (bracket): the required step, then the
// next step past it when that held, or the steps below it from 1 up to
// the first that did not hold when it did not. A step is one run; one that broke
// gets a second, and a tie a third, so that one noisy run decides
// nothing. Then each reset, one step (runReset), folded by
// engine.FoldReset. The runs land in the series' reports; sc's requirements are
// judged as the "stack" table of claims.json. m is the matrix the advice
// is taken from.
func (l *Lab) RunStack(t stack.TB, sc engine.StackCheck, m *report.Matrix) (report.Stack, error) {
	t.Helper()
	bound := sc.File.Requires.P95Ms()
	st := report.Stack{Name: sc.File.Name, Server: sc.Info.Describe(), Path: sc.Path.ID, Capacity: sc.Row.Concurrency,
		Basis: sc.Row.Basis, CapacityDeclared: sc.Info.Capacity > 0, FastP95Ms: bound, ExpectFails: sc.ExpectFails}
	// The steps in the order they run while each holds, so that each run
	// declares the next (Then) and its pod opens ahead, as the series'
	// tables do: a step that broke or is undecided runs something else
	// next, whose pod then opens in place. A pod ahead for a step that
	// does not come goes before the check returns.
	defer l.DiscardAhead()
	var order []engine.Condition
	for _, b := range sc.Behaviours {
		if own := sc.BaselineOf(b); own.ID != sc.Baseline().ID {
			order = append(order, own)
		}
		for _, n := range bracketHeld(b.Steps(), b.Required) {
			order = append(order, sc.Step(b, n))
		}
	}
	for _, r := range sc.Resets {
		order = append(order, sc.ResetStep(r))
	}
	next := func(c engine.Condition) *engine.Condition {
		if c.ID == sc.Baseline().ID && len(order) > 0 {
			return &order[0]
		}
		if i := slices.IndexFunc(order, func(o engine.Condition) bool { return o.ID == c.ID }); i >= 0 && i+1 < len(order) {
			return &order[i+1]
		}
		return nil
	}
	base, err := l.runStep(t, sc.Baseline(), 0, bound, next(sc.Baseline()))
	if err != nil {
		return st, err
	}
	st.Baseline = base
	for _, b := range sc.Behaviours {
		sb := report.StackBehaviour{Column: b.Column.ID, Noun: b.Noun, Required: b.Required, Steps: []report.StackStep{}}
		held := base.State == engine.StateHeld
		if own := sc.BaselineOf(b); held && own.ID != sc.Baseline().ID {
			// Its own path's fast path alone (slow TLS: /fast over TLS).
			step, err := l.runStep(t, own, 0, bound, next(own))
			if err != nil {
				return st, err
			}
			sb.Path, sb.Baseline, held = sc.PathOf(b).ID, &step, step.State == engine.StateHeld
		}
		if held {
			// After the behaviour's bracket comes what follows its held
			// order; within it, the step bracket names.
			var succ *engine.Condition
			if hs := bracketHeld(b.Steps(), b.Required); len(hs) > 0 {
				succ = next(sc.Step(b, hs[len(hs)-1]))
			}
			run := func(n, after int) (report.StackStep, error) {
				then := succ
				if after > 0 {
					c := sc.Step(b, after)
					then = &c
				}
				return l.runStep(t, sc.Step(b, n), n, bound, then)
			}
			if sb.Steps, err = bracket(b.Steps(), b.Required, run); err != nil {
				return st, err
			}
		}
		st.Behaviours = append(st.Behaviours, sb)
	}
	// Each reset after the behaviours, unless the fast path did not hold
	// with no slow client: its bound after the cut would say nothing.
	notRun := map[string]string{engine.StateBroken: fmt.Sprintf("the fast path breaks %g ms with no slow client", bound),
		engine.StateNoData: "the lab could not measure the baseline, with no slow client: " + base.Why}[base.State]
	unsound := make([][]string, len(sc.Resets))
	for i, r := range sc.Resets {
		sr := report.StackReset{Column: r.Column.ID, Noun: r.Noun, Clients: r.Clients, Condition: sc.ResetStep(r).ID}
		if notRun == "" {
			if unsound[i], err = l.runReset(t, sc.ResetStep(r), next(sc.ResetStep(r)), &sr); err != nil {
				return st, err
			}
		}
		st.Resets = append(st.Resets, sr)
	}
	// claims.json's stack table holds every check of the series; this
	// check's claims are its own verdicts' ids.
	all, err := l.Reports.Evaluate(engine.StackTable, l.Reports.StackVerdicts(sc))
	if err != nil {
		return st, err
	}
	claimsOf := func(vs []verdict.Verdict) []report.Claim {
		var out []report.Claim
		for _, v := range vs {
			if i := slices.IndexFunc(all, func(c report.Claim) bool { return c.ID == v.ID }); i >= 0 {
				out = append(out, all[i])
			}
		}
		return out
	}
	for i, r := range sc.Resets {
		st.Resets[i] = engine.FoldReset(sc.File.Name, st.Resets[i], claimsOf(sc.ResetVerdicts(r)), bound, notRun, unsound[i])
	}
	return engine.FoldStack(st, claimsOf(sc.BehaviourVerdicts()), m), nil
}

// runReset runs a reset step c until one run is measured whole, at most
// engine.MaxStepRuns: the cut's verdicts read the worst of its sound
// runs, so one decides. Each run declares then as the next. r gets its
// runs and cut; the reasons of the runs not measured whole are returned.
func (l *Lab) runReset(t stack.TB, c engine.Condition, then *engine.Condition, r *report.StackReset) ([]string, error) {
	t.Helper()
	var unsound []string
	for k := 1; k <= engine.MaxStepRuns; k++ {
		if then != nil {
			l.Then(*then, 1)
		}
		run, err := l.RunA(t, c, k)
		if err != nil {
			return nil, fmt.Errorf("stack check: %s run %d: %w", c.ID, k, err)
		}
		if run.Sound {
			break
		}
		unsound = append(unsound, fmt.Sprintf("run %d: %s", k, run.Invalid))
	}
	s, _ := l.Reports.Condition(c.ID)
	r.RunsSound, r.RunsTotal, r.Cut = s.RunsSound, s.RunsTotal, s.Cut
	return unsound, nil
}

// bracket runs the steps (ascending, the requirement among them) that
// bracket the requirement, through run, and returns them ascending: the
// required step; when it held, the next step past it (the bracket's upper
// side), the steps below held by implication, since one more slow client
// never frees a worker; when it did not (it broke, or the lab could not
// tell), the steps below it from the first up, stopping at the first that
// did not hold, which find where it stalls. A stack that holds so takes
// the required step and the one past it (one step when the requirement
// is the last) where stepping up from 1 took every step to the one past
// it; one that breaks below the requirement takes the required step's
// runs more than that did, one that breaks at it as many. run is given
// the step and the step expected after it within the bracket, 0 when
// none (its pod opens ahead: Lab.Then).
func bracket(steps []int, required int, run func(n, after int) (report.StackStep, error)) ([]report.StackStep, error) {
	r := slices.Index(steps, required)
	if r < 0 {
		return nil, fmt.Errorf("stack check: the requirement %d is not among its steps %v", required, steps)
	}
	// The held order is bracketHeld's, which RunStack opens pods ahead by.
	held := bracketHeld(steps, required)
	after := 0
	if len(held) > 1 {
		after = held[1]
	}
	top, err := run(required, after)
	if err != nil {
		return nil, err
	}
	out := []report.StackStep{top}
	switch {
	case top.State == engine.StateHeld && after > 0:
		past, err := run(after, 0)
		if err != nil {
			return nil, err
		}
		out = append(out, past)
	case top.State != engine.StateHeld:
		for i, n := range steps[:r] {
			after := 0
			if i+1 < r {
				after = steps[i+1]
			}
			step, err := run(n, after)
			if err != nil {
				return nil, err
			}
			out = append(out, step)
			if step.State != engine.StateHeld {
				break
			}
		}
	}
	slices.SortFunc(out, func(a, b report.StackStep) int { return a.Clients - b.Clients })
	return out, nil
}

// bracketHeld are the steps bracket runs while every one holds: the
// required step and the next past it.
func bracketHeld(steps []int, required int) []int {
	r := slices.Index(steps, required)
	if r < 0 {
		return nil
	}
	return steps[r:min(r+2, len(steps))]
}

// runStep runs c once, or twice or three times (RunStack), and reports it.
// Each run declares then, the step after c, as the next (Lab.Then), or
// nothing when c is the last.
func (l *Lab) runStep(t stack.TB, c engine.Condition, n int, bound float64, then *engine.Condition) (report.StackStep, error) {
	t.Helper()
	var s report.Condition
	var unsound []string
	for k := 1; k <= engine.MaxStepRuns; k++ {
		if then != nil {
			l.Then(*then, 1)
		}
		r, err := l.RunA(t, c, k)
		if err != nil {
			return report.StackStep{}, fmt.Errorf("stack check: %s run %d: %w", c.ID, k, err)
		}
		if !r.Sound {
			unsound = append(unsound, fmt.Sprintf("run %d: %s", k, r.Invalid))
		}
		s, _ = l.Reports.Condition(c.ID) // it has run k
		if state, _, err := verdict.Step(s, bound); err == nil && state != verdict.StepUndecided {
			break
		}
	}
	step := engine.StepOf(s, n, bound)
	if step.State == engine.StateNoData {
		step.Why = engine.NoDataWhy(s, unsound)
	}
	return step, nil
}

// CheckStack checks the stack file f: its own NGINX config through nginx
// -t; its app image found on the engine (a team's own, never pulled) or
// built from its app directory on the lab image; then RunStack against the
// matrix of fixtures/report. All of that happens before its first run, so
// a bad image or config starts nothing. The verdict goes to stacks.json,
// the file and images to environment.json.
func (l *Lab) CheckStack(t stack.TB, f stackfile.File, opts ...engine.StackOption) (report.Stack, error) {
	t.Helper()
	sc, err := engine.NewStackCheck(f)
	if err != nil {
		return report.Stack{}, err
	}
	for _, o := range opts {
		o(&sc)
	}
	// Every front door, preset or own config, passes its own config check
	// before anything is built or started.
	if p := sc.Path.Proxy; p != nil {
		field := "proxy.kind " + p.Kind
		switch {
		case f.Proxy.Config != "":
			field = "proxy.config " + f.Proxy.Config
		case p.Kind == proxy.KindNginx:
			field = "proxy.mode " + f.Proxy.Mode
		case f.Proxy.Preset != "":
			field = "proxy.preset " + f.Proxy.Preset
		}
		if err := stack.ProxyCheck(l.Session, l.Image, *p); err != nil {
			return report.Stack{}, fmt.Errorf("stack file %s: %s: %w", f.Name, field, err)
		}
	}
	eng := l.Session.Pool().Client
	var app report.Image
	if f.App != nil {
		ctx, cancel := context.WithTimeout(context.Background(), DefaultStackBuildWait)
		defer cancel()
		if app, err = image.EnsureStackApp(ctx, eng, l.Image, f); err != nil {
			return report.Stack{}, err
		}
		sc = sc.WithImage(app.Ref)
	} else if app, err = image.Inspect(eng, f.Image.Ref); err != nil {
		return report.Stack{}, fmt.Errorf("stack file %s: image.ref: %w", f.Name, err)
	}
	lab, err := image.Inspect(eng, l.Image)
	if err != nil {
		return report.Stack{}, err
	}
	if f.Paths.WS != nil && f.Requires.WSSlowConsumers > 0 {
		if err := l.wsCheck(t, sc); err != nil {
			hint := ""
			if f.Proxy.Config != "" {
				hint = fmt.Sprintf(" (does your proxy.config pass the Upgrade on at %s: proxy_http_version 1.1 and the Upgrade and Connection headers?)", f.Paths.WS.Path)
			}
			return report.Stack{}, fmt.Errorf("stack file %s: paths.ws %s: %w%s", f.Name, f.Paths.WS.Path, err, hint)
		}
	}
	l.Reports.AddStackEnv(report.StackEnv{Name: f.Name, File: f.Path, Source: string(f.Source), Images: []report.Image{app, lab}}, sc)
	m, err := engine.OurMatrix()
	if err != nil {
		return report.Stack{}, err
	}
	st, err := l.RunStack(t, sc, m)
	if err != nil {
		return st, err
	}
	return st, l.Reports.AddStack(st)
}

// wsCheck starts sc's pod once, on the path its WebSocket consumers run
// on, and asks paths.ws for its Upgrade (stack.Pod.WSCheck): a path that
// does not answer 101 is refused before any step runs. The pod is gone
// when it returns.
func (l *Lab) wsCheck(t stack.TB, sc engine.StackCheck) error {
	t.Helper()
	i := slices.IndexFunc(sc.Behaviours, func(b engine.StackBehaviour) bool { return b.Column.ID == engine.WSSlowConsumer.ID })
	if i < 0 {
		return nil
	}
	c := sc.BaselineOf(sc.Behaviours[i])
	p, err := stack.Open(t, l.Session, c.Pod(l.Image), stack.Ident{Condition: c.ID + "-ws-check"})
	if err != nil {
		return err
	}
	defer p.Close()
	return p.WSCheck(sc.Target.WSPath)
}

// DefaultStackBuildWait bounds the build of a stack's app image.
const DefaultStackBuildWait = 5 * time.Minute
