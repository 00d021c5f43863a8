// Package runrec is a run's raw record: everything one run of a condition
// collected, from which the engine derives its report rows. The engine
// writes it as raw/<condition>-run<k>.json; a Kubernetes pod's client
// (labagent pod client) prints it, so this package stays light enough for
// the agent.
package runrec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"wsgilab/bench/internal/load"
	"wsgilab/bench/internal/podspec"
	"wsgilab/bench/internal/probe"
	"wsgilab/bench/internal/safety"
)

// Record is a run's raw record, raw/<condition>-run<k>.json: everything
// the run collected, from which SummarizeRun derives its report rows.
type Record struct {
	Condition string                 `json:"condition"`
	Run       int                    `json:"run"`
	Pod       podspec.Config         `json:"pod"`
	Load      load.Result            `json:"load"`
	Writes    map[string]WriteRecord `json:"writes"`
	Client    probe.Inspection       `json:"client_inspection"`
	Sampler   *probe.Series          `json:"sampler,omitempty"`
	Started   time.Time              `json:"started_at"`
	// PodOpened is when the run's pod was asked for: before Started when
	// it was opened ahead, during the previous run's collection (Then).
	PodOpened time.Time `json:"pod_opened_at"`
	// AppLog is the app container's log from the pod's start (its last
	// MaxLogLines lines): what the server said of the run, Gunicorn's
	// worker timeouts among it; AppLogError why it could not be read.
	AppLog      string `json:"app_log,omitempty"`
	AppLogError string `json:"app_log_error,omitempty"`
	// Phases is where the run's wall time went outside its load window.
	Phases Phases `json:"phases"`
	// WallS is the run's wall time from Started to its last collection
	// (the pod's teardown follows), set by Reports.AddRun.
	WallS float64 `json:"wall_s"`
	// Host is the host safety stop's points over the load window: the
	// CPU outside the lab while the run measured (nil when the stop was
	// off, or in a Kubernetes pod).
	Host *HostSamples `json:"host,omitempty"`
	// OOMKilled are the roles (app, proxy) the OOM killer hit at their
	// memory limit during the run, in a condition that may exhaust memory
	// (engine.Condition.MayExhaust): the run's outcome, not an error.
	OOMKilled []string `json:"oom_killed,omitempty"`
}

// Measured is what `labagent run -inspect` prints: the load's result
// (Record.Load) and the client's own limits, OOM kills and the
// namespace's sysctls (Record.Client), read once the load has ended, from
// one exec where a run took two. Its keys are Record's.
type Measured struct {
	Load   load.Result      `json:"load"`
	Client probe.Inspection `json:"client_inspection"`
}

// HostSamples are the safety stop's points over a window, one per
// interval.
type HostSamples struct {
	Interval time.Duration  `json:"interval_ns"`
	Points   []safety.Point `json:"points"`
}

// Phases are the parts of a run's wall time outside its load window, in
// seconds: opening the pod (or waiting for the one started ahead),
// launching the sampler (its exec runs on in the background), starting
// the load (the exec and the process's start, and the wait for the
// sampler's first sample, up to the load's own clock), and after the
// window the sampler's stop and the records' reads. The pod's teardown
// follows them.
type Phases struct {
	PodS       float64 `json:"pod_s"`
	SamplerS   float64 `json:"sampler_s"`
	LoadStartS float64 `json:"load_start_s"`
	CollectS   float64 `json:"collect_s"`
}

// WriteRecord is one line of the app's write-duration log.
type WriteRecord struct {
	ID       string        `json:"id"`
	PID      int           `json:"pid"`
	Bytes    int64         `json:"bytes"`
	Size     int64         `json:"size"`
	Complete bool          `json:"complete"`
	StartNs  int64         `json:"start_unix_ns"`
	Write    time.Duration `json:"write_ns"`
}

// MaxLogLines bounds the app log a record keeps: its last lines.
const MaxLogLines = 500

// ParseWrites reads the app's write log (one JSON WriteRecord per line),
// keyed by X-Lab-Id.
func ParseWrites(log []byte) (map[string]WriteRecord, error) {
	recs := map[string]WriteRecord{}
	for _, line := range bytes.Split(bytes.TrimSpace(log), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var w WriteRecord
		if err := json.Unmarshal(line, &w); err != nil {
			return nil, fmt.Errorf("runrec: write log line %q: %w", line, err)
		}
		recs[w.ID] = w
	}
	return recs, nil
}
