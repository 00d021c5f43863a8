package stack

import (
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"time"

	"wsgilab/bench/internal/image"
	"wsgilab/bench/internal/probe"
)

// SamplerRun is a sampling run in progress; Stop ends it.
type SamplerRun struct {
	pod *Pod
	// stop is the file whose creation in the sampler container ends the run.
	stop string
	done chan samplerOutcome
}

type samplerOutcome struct {
	series probe.Series
	err    error
}

// StartSampler starts sampling every interval and returns once the sampler has
// taken its first sample, so the series covers what follows.
func (p *Pod) StartSampler(interval time.Duration) (*SamplerRun, error) {
	if p.Sampler == nil {
		return nil, fmt.Errorf("stack: the pod has no sampler container; start it with WithSampler(true)")
	}
	// Each run has its own marker files, so a pod can be sampled again.
	p.samplerRuns++
	started := fmt.Sprintf("/tmp/sampler-%d-started", p.samplerRuns)
	stop := fmt.Sprintf("/tmp/sampler-%d-stop", p.samplerRuns)
	spec := probe.SamplerSpec{
		Interval: interval, ProcRoot: "/proc", AppPort: p.Config.Server.ListenPort(), StopFile: stop,
		Containers: map[string]string{"app": p.App.Container.ID, "client": p.Client.Container.ID},
	}
	if p.Proxy != nil {
		spec.Containers["proxy"] = p.Proxy.Container.ID
		spec.TempDir = p.Config.Proxy.TempPath
		_, port, _ := net.SplitHostPort(p.Config.Proxy.Listen)
		spec.ProxyPort, _ = strconv.Atoi(port)
	}
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	run := &SamplerRun{pod: p, stop: stop, done: make(chan samplerOutcome, 1)}
	go func() {
		var out samplerOutcome
		out.err = p.ExecJSON(p.Sampler, &out.series, "sh", "-c", `touch `+started+` && exec "$0" probe "$1"`,
			image.AgentPath, string(b))
		run.done <- out
	}()
	_, err = p.Exec(p.Sampler, "sh", "-c",
		`for i in $(seq 250); do [ -e `+started+` ] && exit 0; sleep 0.02; done; echo sampler did not start >&2; exit 1`)
	if err != nil {
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
