package stack

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"wsgilab/bench/internal/image"
	"wsgilab/bench/internal/podrun"
	"wsgilab/bench/internal/podspec"
	"wsgilab/bench/internal/probe"
)

// SamplerRun is a sampling run in progress; Stop ends it.
type SamplerRun struct {
	pod *Pod
	// stop is the file whose creation in the sampler container ends the run.
	stop string
	// ReadyAddr is where the sampler listens once it has taken its first
	// sample (probe.SamplerSpec.ReadyAddr).
	ReadyAddr string
	done      chan samplerOutcome
}

type samplerOutcome struct {
	series probe.Series
	err    error
}

// SamplerOption changes a sampler's spec.
type SamplerOption func(*probe.SamplerSpec)

// WithQuietFDs holds the sampler's ready signal, and so the load, until
// the app's and the proxy's descriptors have stayed the same for d
// (probe.SamplerSpec.QuietFor).
func WithQuietFDs(d time.Duration) SamplerOption {
	return func(s *probe.SamplerSpec) { s.QuietFor = d }
}

// BeginSampler starts sampling every interval and returns at once. The
// sampler listens on run.ReadyAddr once it has taken its first sample
// (with WithQuietFDs, once the descriptors are quiet): a load given that address (load.Spec.After) starts then, so the
// sampler's start and the load's exec overlap instead of following each
// other (0.14 s a run here).
func (p *Pod) BeginSampler(interval time.Duration, opts ...SamplerOption) (*SamplerRun, error) {
	if p.Sampler == nil {
		return nil, fmt.Errorf("stack: the pod has no sampler container; start it with WithSampler(true)")
	}
	// Each run has its own stop file and address, so a pod can be sampled
	// again.
	p.samplerRuns++
	stop := fmt.Sprintf("/tmp/sampler-%d-stop", p.samplerRuns)
	spec := podrun.SamplerSpec(p.Config, interval, stop, fmt.Sprintf("@wsgilab-sampler-%d", p.samplerRuns))
	spec.Containers[podspec.RoleApp], spec.Containers[podspec.RoleClient] = p.App.Container.ID, p.Client.Container.ID
	for _, o := range opts {
		o(&spec)
	}
	if p.Proxy != nil {
		spec.Containers[podspec.RoleProxy] = p.Proxy.Container.ID
	}
	if p.Hop != nil { // its CPU, memory and descriptors, sampled as the others'
		spec.Containers[podspec.RoleHop] = p.Hop.Container.ID
	}
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	run := &SamplerRun{pod: p, stop: stop, ReadyAddr: spec.ReadyAddr, done: make(chan samplerOutcome, 1)}
	go func() {
		var out samplerOutcome
		out.err = p.ExecJSON(p.Sampler, &out.series, image.AgentPath, "probe", string(b))
		run.done <- out
	}()
	return run, nil
}

// StartSampler starts sampling every interval and returns once the sampler
// has taken its first sample (its ReadyAddr is listed in the pod's
// /proc/net/unix), so the series covers what follows.
func (p *Pod) StartSampler(interval time.Duration) (*SamplerRun, error) {
	run, err := p.BeginSampler(interval)
	if err != nil {
		return nil, err
	}
	// /proc/net/unix shows an abstract address with its leading @.
	if _, err := p.Exec(p.Sampler, "sh", "-c",
		`for i in $(seq 250); do grep -q -- ' `+run.ReadyAddr+`$' /proc/net/unix && exit 0; sleep 0.02; done; echo sampler did not start >&2; exit 1`); err != nil {
		if _, serr := run.Stop(); serr != nil {
			err = errors.Join(err, serr)
		}
		return nil, err
	}
	return run, nil
}

// Stop ends the sampling run and returns its series.
func (r *SamplerRun) Stop() (probe.Series, error) {
	if _, err := r.pod.Exec(r.pod.Sampler, "touch", r.stop); err != nil {
		return probe.Series{}, err
	}
	out := <-r.done
	return out.series, out.err
}
