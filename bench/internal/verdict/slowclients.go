package verdict

import (
	"fmt"
	"slices"
	"strings"

	"wsgilab/bench/internal/report"
)

// Outcomes holds when every slow client of condition id's sound runs
// ended in one of outcomes (load.Download.Outcome); the measured value is
// the share that did.
func Outcomes(id string, outcomes ...string) Check { return outcomeCheck{id, outcomes} }

type outcomeCheck struct {
	id       string
	outcomes []string
}

func (c outcomeCheck) Needs() []string { return []string{c.id} }

func (c outcomeCheck) Eval(d Data) (Outcome, error) {
	s, ok := d.Conditions[c.id]
	if !ok {
		return Outcome{}, fmt.Errorf("%s: no summary", c.id)
	}
	var total, in int
	for o, n := range s.SlowOutcomes {
		total += n
		for _, w := range c.outcomes {
			if o == w {
				in += n
			}
		}
	}
	if s.RunsSound == 0 || total == 0 || total != s.RecordsPerRun()*s.RunsSound {
		return Outcome{}, fmt.Errorf("%s: no sound run with all its slow clients", c.id)
	}
	share := float64(in) / float64(total)
	return Outcome{Measured: share, Threshold: "= 1 (every slow client " + strings.Join(c.outcomes, " or ") + ")", Holds: in == total}, nil
}

// WorkerTimeoutRuns is the share of sound runs in which Gunicorn logged
// a worker timeout.
var WorkerTimeoutRuns = Metric{Name: "share of runs with a worker timeout", of: func(c report.Condition) (float64, error) {
	if c.RunsSound == 0 {
		return 0, fmt.Errorf("no sound run")
	}
	return float64(c.RunsWorkerTimeout) / float64(c.RunsSound), nil
}}

// AcceptQueueStalled is the accept-queue peak over which /fast
// connections waited in numbers: a stalled cell's /fast requests (8 a
// second) queue for seconds, a protected cell's are accepted at once.
const AcceptQueueStalled = 10

// SlowClients are the matrix's verdicts on the slow-client columns beyond
// the slow reader: the ones the issue states and the mechanism makes
// certain, each with its distribution in reports/measurements.md.
var SlowClients = []Verdict{
	{ID: "sync-slow-upload-direct-stalls", Kind: Lab, Unit: "ms", Check: Stalls(CellID(slowUpload, syncRow, direct)),
		Text: "2 Gunicorn sync workers stall /fast under 2 slow uploads: each worker waits in recv for its client's body"},
	{ID: "sync-slow-headers-direct-stalls", Kind: Lab, Unit: "ms", Check: Stalls(CellID(slowHeaders, syncRow, direct)),
		Text: "2 Gunicorn sync workers stall /fast under 2 slow-header clients: each worker waits in recv for the rest of a header"},
	{ID: "sync-silent-direct-stalls", Kind: Lab, Unit: "ms", Check: Stalls(CellID(silent, syncRow, direct)),
		Text: "2 Gunicorn sync workers stall /fast under 2 silent connections: each worker accepts one and waits in recv for a request that never comes"},
	// Their mechanism, from the socket sampler: the /fast connections
	// wait in the listening socket's accept queue, since no worker is
	// free to accept them.
	{ID: "sync-silent-direct-fast-waits-to-be-accepted", Kind: Lab, Unit: "connections", Check: Above(CellID(silent, syncRow, direct), AcceptQueue, AcceptQueueStalled),
		Text: "under silent connections the /fast connections pile up in the accept queue: both sync workers are held, and none accepts"},
	{ID: "sync-slow-headers-direct-fast-waits-to-be-accepted", Kind: Lab, Unit: "connections", Check: Above(CellID(slowHeaders, syncRow, direct), AcceptQueue, AcceptQueueStalled),
		Text: "under slow headers the /fast connections pile up in the accept queue as well"},
	// Request buffering on lifts the stall but, against expectation, does
	// not keep /fast in the protected class: NGINX hands each whole body
	// over at once, and the two sync workers, on a quarter of a core, take
	// 0.4 to 0.8 s to read 16 MiB each; /fast requests that fall in that
	// burst wait for it. The p95 (75 to 312 ms over 4 samples) is the
	// burst less about 3 requests' spacing (0.375 s), so it stays under
	// StalledMs while a burst lasts under 1.3 s.
	{ID: "sync-slow-upload-nginx-on-no-stall", Kind: Lab, Unit: "ms", Check: Below(CellID(slowUpload, syncRow, nginxOn), P95, StalledMs),
		Text: "NGINX with proxy_request_buffering on (its default) lifts the stall of 2 sync workers under 2 slow uploads: /fast p95 under 1 s, against 7.4 s directly"},
	{ID: "sync-slow-upload-nginx-on-reads-at-once", Kind: Lab, Unit: "s", Check: Below(CellID(slowUpload, syncRow, nginxOn), WriteS, 2),
		Text: "NGINX reads each slow body whole before it connects upstream: the worker reads it at loopback speed, under 2 s against the client's 8 s"},
	{ID: "sync-slow-upload-nginx-reqbuf-off-stalls", Kind: Lab, Unit: "ms", Check: Stalls(CellID(slowUpload, syncRow, reqbufOff)),
		Text: "with proxy_request_buffering off, NGINX streams each slow body to a sync worker as it comes: /fast stalls"},
	{ID: "sync-outlive-timeout-direct-cut", Kind: Lab, Unit: "share", Check: Outcomes(CellID(outliveTimeout, syncRow, direct), "truncated", "reset"),
		Text: "a download slower than --timeout 5 is cut: the sync worker blocked in its send never notifies the arbiter, which kills it"},
	{ID: "sync-outlive-timeout-direct-logged", Kind: Lab, Unit: "share", Check: Between(CellID(outliveTimeout, syncRow, direct), WorkerTimeoutRuns, 1, 1),
		Text: "Gunicorn logs the kill: a WORKER TIMEOUT line in every run"},
	{ID: "sync-outlive-timeout-nginx-on-complete", Kind: Lab, Unit: "share", Check: Outcomes(CellID(outliveTimeout, syncRow, nginxOn), "complete"),
		Text: "behind NGINX buffering on the same download completes: NGINX takes the body at once and the worker is free long before its timeout"},
}

// SlowClientsMeasured are verdicts on cells beyond the claims,
// asserted where their cells run (make repro): what the matrix measured
// whose mechanism makes it certain.
var SlowClientsMeasured = []Verdict{
	{ID: "uwsgi-offload-slow-upload-direct-stalls", Kind: Lab, Unit: "ms", Check: Stalls(CellID(slowUpload, uwsgiFileOffload, direct)),
		Text: "uWSGI's offload threads take responses, not request bodies: the row they protect from slow readers stalls under slow uploads"},
	{ID: "uwsgi-offload-slow-headers-direct-stalls", Kind: Lab, Unit: "ms", Check: Stalls(CellID(slowHeaders, uwsgiFileOffload, direct)),
		Text: "uWSGI's sync workers read a request's headers themselves: slow headers (a line every 500 ms, inside its 4 s socket timeout) hold both"},
	{ID: "gthread-silent-direct-protected", Kind: Lab, Unit: "ms", Check: Protected(CellID(silent, gthreadRow, direct)),
		Text: "gthread's main thread polls idle connections and hands one to a thread only once it is readable: silent connections take no thread"},
	{ID: "gthread-slow-headers-direct-protected", Kind: Lab, Unit: "ms", Check: Protected(CellID(slowHeaders, gthreadRow, direct)),
		Text: "2 slow-header clients hold 2 of gthread's 4 threads (a connection goes to a thread at its first byte): 2 stay free"},
	{ID: "gevent-slow-headers-closed", Kind: Lab, Unit: "share", Check: Outcomes(CellID(slowHeaders, geventRow, direct), "closed"),
		Text: "Gunicorn's gevent worker closes a connection whose request is not whole within --keep-alive (2 s): slow headers are cut"},
	{ID: "gevent-silent-closed", Kind: Lab, Unit: "share", Check: Outcomes(CellID(silent, geventRow, direct), "closed"),
		Text: "and so is a silent connection"},
	{ID: "gevent-slow-upload-direct-protected", Kind: Lab, Unit: "ms", Check: Protected(CellID(slowUpload, geventRow, direct)),
		Text: "2 gevent workers keep /fast protected under 2 slow uploads: a read that would block yields to the hub"},
	{ID: "uvicorn-slow-upload-direct-protected", Kind: Lab, Unit: "ms", Check: Protected(CellID(slowUpload, uvicornRow, direct)),
		Text: "Uvicorn alone keeps /fast protected under 2 slow uploads: receive() awaits the body in the event loop"},
}

// soundSummary is condition id's summary, an error when it has none or
// no sound run.
func soundSummary(d Data, id string) (report.Condition, error) {
	s, ok := d.Conditions[id]
	switch {
	case !ok:
		return s, fmt.Errorf("%s: no summary", id)
	case s.RunsSound == 0:
		return s, fmt.Errorf("%s: no sound run", id)
	}
	return s, nil
}

// AppKilled holds when the OOM killer ended the app at its memory limit
// in every sound run of condition id (a column that may exhaust a
// server, whose killed runs are sound). The measured value is the share
// of sound runs killed.
func AppKilled(id string) Check { return appKilledCheck{id} }

type appKilledCheck struct{ id string }

func (c appKilledCheck) Needs() []string { return []string{c.id} }

func (c appKilledCheck) Eval(d Data) (Outcome, error) {
	s, err := soundSummary(d, c.id)
	if err != nil {
		return Outcome{}, err
	}
	// A kill of the proxy too would make RunsOOM count more than the app's.
	killed := slices.Contains(s.OOMKilled, "app") && !slices.Contains(s.OOMKilled, "proxy")
	return Outcome{Measured: float64(s.RunsOOM) / float64(s.RunsSound),
		Threshold: fmt.Sprintf("the app OOM-killed in every sound run (%d of %d killed)", s.RunsOOM, s.RunsSound),
		Holds:     killed && s.RunsOOM == s.RunsSound}, nil
}

// ProxyExhausted holds when, in every sound run of condition id, the
// front door was killed at its memory limit or filled its temp
// directory, spilling spillMiB or more. The measured value is the least
// spill of the sound runs it survived (0 when it survived none).
func ProxyExhausted(id string, spillMiB float64) Check { return exhaustedCheck{id, spillMiB} }

type exhaustedCheck struct {
	id       string
	spillMiB float64
}

func (c exhaustedCheck) Needs() []string { return []string{c.id} }

func (c exhaustedCheck) Eval(d Data) (Outcome, error) {
	s, err := soundSummary(d, c.id)
	if err != nil {
		return Outcome{}, err
	}
	killed := slices.Contains(s.OOMKilled, "proxy")
	threshold := fmt.Sprintf(">= %g MiB spilled, or the proxy OOM-killed, in every sound run (%d of %d killed)", c.spillMiB, s.RunsOOM, s.RunsSound)
	if s.RunsOOM == s.RunsSound { // no run the proxy survived
		return Outcome{Measured: 0, Threshold: threshold, Holds: killed}, nil
	}
	if s.TempfilePeakMiBSoundLeast == nil {
		return Outcome{}, fmt.Errorf("%s: a sound run the proxy survived has no temp-file peak", c.id)
	}
	least := *s.TempfilePeakMiBSoundLeast
	return Outcome{Measured: least, Threshold: threshold, Holds: least >= c.spillMiB && (s.RunsOOM == 0 || killed)}, nil
}
