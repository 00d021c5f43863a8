package labrun

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"wsgilab/bench/internal/disturb"
	"wsgilab/bench/internal/engine"
	"wsgilab/bench/internal/image"
	"wsgilab/bench/internal/podspec"
	"wsgilab/bench/internal/probe"
	"wsgilab/bench/internal/report"
	"wsgilab/bench/internal/runrec"
	"wsgilab/bench/internal/safety"
	"wsgilab/bench/internal/stack"
)

// Lab is what every run needs: the series' session on the engine, the lab
// image, the settings and the series' reports; and optionally the host
// safety stop, the journal a series resumes from, and a log for aborts.
type Lab struct {
	Session  *stack.Session
	Image    string
	Settings engine.Settings
	Reports  *engine.Reports
	// Safety, when set, discards and reruns a unit during which the host
	// was busy outside the lab (see attempt).
	Safety *safety.Stop
	// Journal, when set, keeps each completed unit and gives it back
	// instead of running it again.
	Journal *engine.Journal
	// Log receives the safety stop's abort lines.
	Log io.Writer
	// BeforeAttempt, when set, is called as attempt n of a unit begins:
	// the redo rule's test starts its CPU burner there.
	BeforeAttempt func(unit string, n int)
	// WholeRuns keeps every run to its whole load. Otherwise, while the
	// redo rule is on (Safety), a run whose client has already crossed
	// the rule's lag bounds stops there (load.Spec.StopOnLag), since the
	// rule will discard it whatever the rest measures. The tests of the
	// host's own checks (the safety stop, the CPU outside the lab) run
	// whole: a lag stop could end the attempt their CPU hogs fall in
	// before those checks see them.
	WholeRuns bool
	// Pause, when set, stands for time.Sleep between attempts (the
	// attempts' tests, whose units are discarded on purpose).
	Pause func(time.Duration)

	// then is the run declared to follow (Then), and ahead the pod being
	// opened for it, if any (ahead.go).
	then  *next
	ahead *ahead
}

// RunA runs condition c once, as run k, in a fresh pod: start the pod,
// start the /proc sampler, run the load from the client container, stop
// the sampler, collect the app's write records and the client's limits.
// It records the run and returns its summary; an error means the run
// could not be carried out at all (a run that ran but measured something
// wrong is returned as invalid), or that it was disturbed in every
// attempt (ErrTooBusy). A run in the journal is not run again; a run the
// safety stop or the redo rule discards is run again once the host is
// calm (attempt).
func (l *Lab) RunA(t stack.TB, c engine.Condition, k int) (report.Run, error) {
	t.Helper()
	defer func() { l.then = nil }() // a declaration is good for one run
	if err := c.Validate(); err != nil {
		return report.Run{}, err
	}
	l.Reports.Begin(c.ID)
	l.Reports.AttemptA(c)
	var rec engine.Record
	if ok, err := l.Journal.LoadFile(engine.UnitA(c, k), &rec); ok || err != nil {
		if err != nil {
			return report.Run{}, err
		}
		return l.Reports.AddRun(c, rec)
	}
	err := l.attempt(fmt.Sprintf("%s run %d", c.ID, k), []string{c.ID}, func(n int) (*discard, error) {
		var err error
		if rec, err = l.measureA(t, c, k); err != nil {
			return nil, err
		}
		return l.judgeA(c, c.ID, rec, n)
	})
	if err != nil {
		return report.Run{}, err
	}
	run, err := l.Reports.AddRun(c, rec)
	if err != nil {
		return run, err
	}
	return run, l.Journal.SaveFile(engine.UnitA(c, k), engine.RawA(c, k))
}

// measureA carries out one attempt at run k of c, in a pod it removes
// before returning. Once its window is over, the pod of the run declared
// by Then starts (ahead.go).
func (l *Lab) measureA(t stack.TB, c engine.Condition, k int) (engine.Record, error) {
	rec := engine.Record{Condition: c.ID, Run: k, Pod: c.Pod(l.Image), Started: time.Now()}
	pod, err := l.openPod(t, c, k)
	if err != nil {
		return rec, err
	}
	defer pod.Close()
	rec.PodOpened = pod.Opened
	mark := time.Now()
	rec.Phases.PodS = mark.Sub(rec.Started).Seconds()
	ld := l.Settings.Table().Load(c, pod.URL(""), fmt.Sprintf("%s-r%d", c.ID, k))
	if ld.Warm != nil { // before the sampler, whose count before the load it is in
		w, err := json.Marshal(ld.Warm)
		if err == nil {
			_, err = pod.Exec(pod.Client, image.AgentPath, "warm", string(w))
		}
		if err != nil {
			return rec, fmt.Errorf("warming %s: %w", ld.Warm.URL, err)
		}
	}
	var opts []stack.SamplerOption
	if f, ok := engine.FaultByID(c.Fault); ok && f.Cut() { // its leak check's count before the load
		opts = append(opts, stack.WithQuietFDs(engine.FDQuietSpan))
	}
	sampling, err := pod.BeginSampler(probe.DefaultInterval, opts...)
	if err != nil {
		return rec, err
	}
	rec.Phases.SamplerS = time.Since(mark).Seconds()
	mark = time.Now()
	// The load starts once the sampler has taken its first sample (a
	// cutting fault's, once the descriptors are quiet): the two execs run
	// at once, and LoadStartS holds both starts and that wait.
	ld.After = sampling.ReadyAddr
	ld.CAPEM = string(pod.CAPEM()) // empty unless the pod speaks TLS
	if l.Safety != nil {           // the redo rule is on: its client meters its hiccups
		ld.HiccupEvery = disturb.HiccupEvery(l.Settings.Safety.Redo)
		if !l.WholeRuns { // and a run it will discard stops early
			ld.StopOnLag = disturb.LagStop(l.Settings.Safety.Redo)
		}
	}
	spec, err := json.Marshal(ld)
	if err != nil {
		sampling.Stop()
		return rec, err
	}
	l.trace("load " + pod.Ident.String())
	// One exec runs the load and then reads the client's limits: each exec
	// costs the engine about 0.16 core-seconds, in the gap between two
	// windows, which is CPU-bound.
	var measured runrec.Measured
	loadErr := pod.ExecJSON(pod.Client, &measured, image.AgentPath, "run", "-inspect", string(spec))
	rec.Load, rec.Client = measured.Load, measured.Client
	l.trace("collect " + pod.Ident.String())
	if loadErr == nil {
		loadStart := time.Unix(0, rec.Load.StartUnixNano)
		rec.Phases.LoadStartS = loadStart.Sub(mark).Seconds()
		mark = loadStart.Add(rec.Load.Elapsed)
	}
	l.startAhead()
	series, err := sampling.Stop()
	if loadErr == nil {
		rec.Host = l.hostSamples(rec)
	}
	if oom := pod.OOMKilled(); oom != nil { // the cause of any load error
		var killed *stack.OOMError
		if !c.MayExhaust || !errors.As(oom, &killed) || slices.ContainsFunc(killed.Roles, func(r string) bool {
			return r != podspec.RoleApp && r != podspec.RoleProxy
		}) {
			return rec, oom
		}
		rec.OOMKilled = killed.Roles
	}
	if loadErr != nil || err != nil {
		return rec, errors.Join(wrap("load", loadErr), wrap("sampler", err))
	}
	rec.Sampler = &series
	// The two reads are an exec and an API call: together they take the
	// longer one's time, not the sum.
	var wg sync.WaitGroup
	var logErr, writesErr error
	wg.Go(func() { rec.AppLog, logErr = pod.LogSince(pod.App, pod.Opened) })
	// A team's app keeps no write records; an app the OOM killer hit may
	// have lost its container, and its records with it: the run's
	// downloads then have none, and the summary reads them from the
	// client's records alone (engine.SummarizeRun).
	if c.Target == nil && !slices.Contains(rec.OOMKilled, podspec.RoleApp) {
		wg.Go(func() { rec.Writes, writesErr = pod.Writes() })
	}
	wg.Wait()
	if logErr != nil {
		rec.AppLogError = logErr.Error()
	}
	rec.Phases.CollectS = time.Since(mark).Seconds()
	return rec, writesErr
}

// trace tells the session's Trace, if any, of a step of a run's life.
func (l *Lab) trace(event string) {
	if l.Session != nil && l.Session.Trace != nil {
		l.Session.Trace(event)
	}
}

// wrap prefixes err with what failed; nil stays nil.
func wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", what, err)
}

// RunPod runs one run of c in a pod the caller opens itself (TestKubePod's
// pod, rendered as a Kubernetes Job and run as a kubelet would) under the
// redo rule, as RunA runs its own: attempt n calls measure with a TB whose
// cleanups run as the attempt ends (whatever way it ends), so a discarded
// attempt's pod is gone before the next starts, and the record the rule
// kept is returned, with the safety stop's host samples over its load.
// name is the pod's own name: the unit's, and its discards' raw records'
// (raw/discarded/<name>-run<k>-attempt<n>.json), apart from the series'
// runs of c. One run is all such a test has, and the client's own stall
// (a 2 ms quota in a 10 ms period) can take its /fast p95 from 2 to 20
// ms: judged as a series' runs are, that run is redone rather than read
// as NGINX's. The run is not added to the series' reports; its discards
// are, as every discard is. A pod opened ahead for a run that will not
// come is removed first: no two pods share a window.
func (l *Lab) RunPod(t stack.TB, name string, c engine.Condition, measure func(t stack.TB, n int) (engine.Record, error)) (engine.Record, error) {
	t.Helper()
	l.DiscardAhead()
	var rec engine.Record
	// No condition of the series is named: the series' own runs of c are
	// judged apart, and this unit's giving up must not mark them too busy.
	err := l.attempt(name, nil, func(n int) (*discard, error) {
		var err error
		if rec, err = measureScoped(t, n, measure); err != nil {
			return nil, err
		}
		if rec.Host == nil && rec.Load.StartUnixNano != 0 {
			rec.Host = l.hostSamples(rec)
		}
		return l.judgeA(c, name, rec, n)
	})
	return rec, err
}

// measureScoped calls measure for attempt n with a TB of its own, whose
// cleanups run as measure returns, or as it ends the goroutine (a Fatal,
// a panic): then the errors it reported go to t, which is marked failed,
// and the goroutine goes on ending.
func measureScoped(t stack.TB, n int, measure func(t stack.TB, n int) (engine.Record, error)) (engine.Record, error) {
	scope := &heldTB{}
	returned := false
	defer func() {
		scope.runCleanups()
		scope.adopt(t) // the errors it and its cleanups reported
		if !returned {
			t.Errorf("labrun: attempt %d ended before it returned", n)
		}
	}()
	rec, err := measure(scope, n)
	returned = true
	return rec, err
}
