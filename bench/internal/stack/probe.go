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

// ProbeRun is a sampling run in progress; Stop ends it.
type ProbeRun struct {
	pod *Pod
	// stop is the file whose creation in the probe container ends the run.
	stop string
	done chan probeOutcome
}

type probeOutcome struct {
	series probe.Series
	err    error
}

// StartProbe starts sampling every interval and returns once the probe has
// taken its first sample, so the series covers what follows.
func (p *Pod) StartProbe(interval time.Duration) (*ProbeRun, error) {
	if p.Probe == nil {
		return nil, fmt.Errorf("stack: the pod has no probe container; start it with WithProbe(true)")
	}
	// Each run has its own marker files, so a pod can be sampled again.
	p.probeRuns++
	started := fmt.Sprintf("/tmp/probe-%d-started", p.probeRuns)
	stop := fmt.Sprintf("/tmp/probe-%d-stop", p.probeRuns)
	spec := probe.SamplerSpec{
		Interval: interval, ProcRoot: "/proc", AppPort: AppPort, StopFile: stop,
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
	run := &ProbeRun{pod: p, stop: stop, done: make(chan probeOutcome, 1)}
	go func() {
		var out probeOutcome
		out.err = p.ExecJSON(p.Probe, &out.series, "sh", "-c", `touch `+started+` && exec "$0" probe "$1"`,
			image.AgentPath, string(b))
		run.done <- out
	}()
	_, err = p.Exec(p.Probe, "sh", "-c",
		`for i in $(seq 250); do [ -e `+started+` ] && exit 0; sleep 0.02; done; echo probe did not start >&2; exit 1`)
	if err != nil {
		return nil, err
	}
	return run, nil
}

// Stop ends the sampling run and returns its series.
func (r *ProbeRun) Stop() (probe.Series, error) {
	if _, err := r.pod.Exec(r.pod.Probe, "touch", r.stop); err != nil {
		return probe.Series{}, err
	}
	out := <-r.done
	return out.series, out.err
}
