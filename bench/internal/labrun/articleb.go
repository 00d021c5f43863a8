package labrun

import (
	"encoding/json"
	"fmt"
	"time"

	"wsgilab/bench/internal/engine"
	"wsgilab/bench/internal/image"
	"wsgilab/bench/internal/load"
	"wsgilab/bench/internal/podspec"
	"wsgilab/bench/internal/probe"
	"wsgilab/bench/internal/report"
	"wsgilab/bench/internal/stack"
	"wsgilab/bench/internal/verdict"
)

// StartB starts a fresh pod for one cell (PodB). A failure ends the test
// (OpenB returns it instead).
func (l *Lab) StartB(t stack.TB, srv engine.ServerB, block int) *stack.Pod {
	t.Helper()
	pod, err := l.OpenB(t, srv, block)
	if err != nil {
		t.Fatal(err)
	}
	return pod
}

// OpenB is StartB returning its error.
func (l *Lab) OpenB(t stack.TB, srv engine.ServerB, block int) (*stack.Pod, error) {
	t.Helper()
	l.Reports.Begin(verdict.Cell(srv.ID, block))
	return stack.Open(t, l.Session, engine.PodB(l.Image, srv, block), stack.Ident{Condition: verdict.Cell(srv.ID, block)})
}

// CellB measures one cell of article B in a fresh pod, removed afterwards:
// the warm-up and the profile's pairs (MeasurePairsB). A cell in the
// journal is not measured again; one the safety stop discards is measured
// again, in a fresh pod, once the host is calm. The cell is the unit
// because its pairs share one server.
func (l *Lab) CellB(t stack.TB, srv engine.ServerB, block int, prof engine.ProfileB) (map[string][]engine.RunB, error) {
	t.Helper()
	cell := verdict.Cell(srv.ID, block)
	l.Reports.Begin(cell)
	var runs map[string][]engine.RunB
	if ok, err := l.Journal.Load(engine.UnitB(cell), &runs); ok || err != nil {
		return runs, err
	}
	err := l.attempt(cell, []string{cell}, func(int) (*discard, error) {
		pod, err := l.OpenB(t, srv, block)
		if err != nil {
			return nil, err
		}
		defer pod.Close()
		runs, err = l.MeasurePairsB(pod, srv, block, prof, 0)
		return nil, err
	})
	if err != nil {
		return nil, err
	}
	return runs, l.Journal.Save(engine.UnitB(cell), runs)
}

// recordB is an article B run's raw record, raw/<cell>-<generator>-<k>.json.
type recordB struct {
	ID        string            `json:"id"`
	Generator string            `json:"generator"`
	Pod       podspec.Config    `json:"pod"`
	Result    load.ClosedResult `json:"result"`
	Sampler   *probe.Series     `json:"sampler,omitempty"`
}

// pathB is article B's request: the view AES-encrypts its query.
const pathB = "/account/ulogin/3/?wlanuserip=10.1.2.3&wlanacname=lab-ac&ssid=lab&wlanparameter=00%3A11%3A22%3A33%3A44%3A55"

// MeasurePairsB measures a cell: after WarmUpB, prof.Repeats[block] pairs
// of runs against the pod's server, one of each generator, in Order. burn
// is our generator's test knob (load.ClosedSpec.Burn), 0 in every
// measurement. The runs come back by generator in pair order; any failed
// run fails the call, so the two lists always pair up.
func (l *Lab) MeasurePairsB(pod *stack.Pod, srv engine.ServerB, block int, prof engine.ProfileB, burn time.Duration) (map[string][]engine.RunB, error) {
	if err := l.WarmUpB(pod, srv, block, prof); err != nil {
		return nil, err
	}
	runs := map[string][]engine.RunB{}
	for k := 1; k <= prof.Repeats[block]; k++ {
		for _, gen := range engine.Order(k) {
			b := time.Duration(0)
			if gen == verdict.Ours {
				b = burn
			}
			r, err := l.MeasureB(pod, srv, block, gen, k, prof, b)
			if err != nil {
				return nil, fmt.Errorf("%s pair %d, %s: %w", verdict.Cell(srv.ID, block), k, gen, err)
			}
			runs[gen] = append(runs[gen], r)
		}
	}
	return runs, nil
}

// WarmUpB sends the profile's warm-up requests (WarmupN, or
// WarmupBlockedN) from our generator to srv's fresh server at blocking ms
// block; nothing is recorded.
func (l *Lab) WarmUpB(pod *stack.Pod, srv engine.ServerB, block int, prof engine.ProfileB) error {
	n := prof.Warmup(srv, block)
	if n == 0 {
		return nil
	}
	spec, err := json.Marshal(load.ClosedSpec{URL: pod.URL(pathB), N: n, C: min(prof.C, n), Timeout: load.DefaultClosedTimeout})
	if err != nil {
		return err
	}
	var res load.ClosedResult
	if err := pod.ExecJSON(pod.Client, &res, image.AgentPath, "closed", string(spec)); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	return nil
}

// MeasureB loads the pod's server once with one generator, as repeat k.
// burn is our generator's test knob (load.ClosedSpec.Burn), 0 in every
// measurement.
func (l *Lab) MeasureB(pod *stack.Pod, srv engine.ServerB, block int, gen string, k int, prof engine.ProfileB, burn time.Duration) (engine.RunB, error) {
	id := verdict.Cell(srv.ID, block)
	spec := load.ClosedSpec{URL: pod.URL(pathB), N: prof.Count(srv, block), C: prof.C, Timeout: load.DefaultClosedTimeout, Burn: burn}
	specJSON, err := json.Marshal(spec)
	if err != nil {
		return engine.RunB{}, err
	}
	command := "closed"
	if gen == verdict.AB {
		command = "ab"
	}
	rec := recordB{ID: id, Generator: gen, Pod: pod.Config}
	sampling, err := pod.StartSampler(engine.SamplerIntervalB)
	if err != nil {
		return engine.RunB{}, err
	}
	start := time.Now()
	loadErr := pod.ExecJSON(pod.Client, &rec.Result, image.AgentPath, command, string(specJSON))
	window := time.Since(start)
	series, err := sampling.Stop()
	if oom := pod.OOMKilled(); oom != nil {
		return engine.RunB{}, oom
	}
	if loadErr != nil {
		return engine.RunB{}, fmt.Errorf("%s: %w", gen, loadErr)
	}
	if err != nil {
		return engine.RunB{}, fmt.Errorf("sampler: %w", err)
	}
	if len(series.Errors) > 0 {
		return engine.RunB{}, fmt.Errorf("sampler reported %d error(s), first: %s", len(series.Errors), series.Errors[0])
	}
	rec.Sampler = &series
	if err := report.WriteFile(l.Reports.Dir()+"/raw", fmt.Sprintf("%s-%s-%d.json", id, gen, k), report.JSON(rec)); err != nil {
		return engine.RunB{}, err
	}
	// The sampler's window is the generator's exec.
	obs := engine.Observe(series, load.Result{StartUnixNano: start.UnixNano(), Elapsed: window}, nil)
	app := obs.Resources["app"]
	if app.Samples == 0 {
		return engine.RunB{}, fmt.Errorf("the sampler took no sample of the server in %v", window)
	}
	return engine.RunB{Result: rec.Result, ServerCPU: app.CPUPercent, Throttled: app.ThrottledShare,
		Sampled: engine.Rows(fmt.Sprintf("%s/%s-%d", id, gen, k), k, series, start.UnixNano())}, nil
}
