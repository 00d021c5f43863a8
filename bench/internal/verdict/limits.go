package verdict

import (
	"errors"
	"fmt"

	"wsgilab/bench/internal/report"
)

// Metrics of the connection-limit cells (package engine's LimitTable):
// what thousands of held connections got from a server at its limit, and
// what /fast got beside them.

var errNoSoundRun = errors.New("no sound run")

// SlowPerRun is how many slow clients ended in outcome
// (load.Download.Outcome) in a sound run, on average over the sound runs.
func SlowPerRun(outcome string) Metric {
	return Metric{Name: "slow clients " + outcome + " per run", of: func(c report.Condition) (float64, error) {
		if c.RunsSound == 0 {
			return 0, errNoSoundRun
		}
		return float64(c.SlowOutcomes[outcome]) / float64(c.RunsSound), nil
	}}
}

// FastFailedShare is the share of /fast requests that failed over the
// sound runs: an error status (Uvicorn's 503 past --limit-concurrency), a
// reset or a timeout.
var FastFailedShare = Metric{Name: "share of /fast requests failed", of: func(c report.Condition) (float64, error) {
	if c.RunsSound == 0 || c.RequestsTotal == 0 {
		return 0, errNoSoundRun
	}
	return float64(c.RequestsTotal-c.RequestsOK) / float64(c.RequestsTotal), nil
}}

// P95Sound is the median /fast p95 of the sound runs, whether or not
// their slow clients were served (report.Condition.P95MsSound): /fast
// beside slow clients the server ended (the hang column's), whose runs
// are never valid.
var P95Sound = Metric{Name: "p95 of the sound runs", over: foldMedian, of: func(c report.Condition) (float64, error) {
	if c.RunsSound == 0 || c.RequestsTotal == 0 {
		return 0, errNoSoundRun
	}
	return c.P95MsSound, nil
}}

// ConnectMsMax is the slowest connect of a held connection over the
// sound runs: a second and more when a full listen backlog dropped SYNs.
var ConnectMsMax = Metric{Name: "slowest held connect (ms)", of: func(c report.Condition) (float64, error) {
	if c.RunsSound == 0 {
		return 0, errNoSoundRun
	}
	if c.ConnectMsMax == 0 {
		return 0, fmt.Errorf("no held connection's connect was timed")
	}
	return c.ConnectMsMax, nil
}}
