package report

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"wsgilab/bench/internal/probe"
	"wsgilab/fixtures"
)

// ArticleValue is one of article A's published figures for a condition.
type ArticleValue struct {
	P95Ms           float64   `json:"p95_ms"`
	P95MsRange      []float64 `json:"p95_ms_range,omitempty"`
	WriteS          float64   `json:"write_s,omitempty"`
	CompletionS     float64   `json:"completion_s,omitempty"`
	TempfilePeakMiB float64   `json:"tempfile_peak_mib,omitempty"`
}

// ArticleA reads the article's figures (fixtures/article/article-a.json).
func ArticleA() (map[string]ArticleValue, error) {
	var ref struct {
		Conditions map[string]ArticleValue `json:"conditions"`
	}
	if err := json.Unmarshal(fixtures.ArticleA, &ref); err != nil {
		return nil, fmt.Errorf("report: article-a.json: %w", err)
	}
	return ref.Conditions, nil
}

// Run is one run of one condition: a line of runs.json.
type Run struct {
	Condition string    `json:"condition"`
	Run       int       `json:"run"`
	StartedAt time.Time `json:"started_at"`
	// Sound is false when the lab's own records of the run are not whole
	// (its sampler, the app's write records): such a run says nothing
	// about the server. Valid is false when the run is not sound, or a
	// /fast request failed, or a download was not served whole; Invalid
	// then says why. Invalid runs are kept but not aggregated; the
	// resilience matrix counts a sound run's failures as its outcome.
	Sound   bool   `json:"sound"`
	Valid   bool   `json:"valid"`
	Invalid string `json:"invalid,omitempty"`

	P50Ms float64 `json:"p50_ms"`
	P95Ms float64 `json:"p95_ms"`
	MaxMs float64 `json:"max_ms"`
	// LagMaxMs and LagP99Ms are how late the /fast requester sent its
	// requests; LagSecondMs is the second-latest start, the worst once the
	// single latest request is set aside (a quiet host holds back one
	// request of a run at most: the redo rule reads both).
	LagMaxMs    float64 `json:"lag_max_ms"`
	LagP99Ms    float64 `json:"lag_p99_ms"`
	LagSecondMs float64 `json:"lag_second_ms"`
	// P50MsH2 and P95MsH2 are the /fast latencies of the run's HTTP/2
	// series (load.Spec.FastH2, on a path whose entry point speaks
	// HTTP/2), RequestsOKH2 of RequestsTotalH2 its requests served; all 0
	// without one. The HTTP/1.1 series above stays the verdicts' basis.
	P50MsH2         float64 `json:"p50_ms_h2,omitempty"`
	P95MsH2         float64 `json:"p95_ms_h2,omitempty"`
	RequestsOKH2    int     `json:"requests_ok_h2,omitempty"`
	RequestsTotalH2 int     `json:"requests_total_h2,omitempty"`
	// WriteS and CompletionS are the medians over this run's downloads.
	WriteS            float64 `json:"write_s"`
	CompletionS       float64 `json:"completion_s"`
	RequestsOK        int     `json:"requests_ok"`
	RequestsTotal     int     `json:"requests_total"`
	DownloadsComplete int     `json:"downloads_complete"`
	DownloadsTotal    int     `json:"downloads_total"`
	// BaselineP50Ms and BaselineP95Ms time plain sequential exchanges with
	// /fast after the load (0-download conditions only): the endpoint
	// without the requester's scheduling.
	BaselineP50Ms float64 `json:"baseline_p50_ms,omitempty"`
	BaselineP95Ms float64 `json:"baseline_p95_ms,omitempty"`
	// WindowS is the load's own duration; WallS the whole run with the
	// pod's start and teardown.
	WindowS float64 `json:"window_s"`
	// WallStepMs is how far the wall clock moved against the monotonic
	// clock over the load (load.Result.WallStep): the redo rule redoes a
	// run past its bound, and a run past disturb.DefaultWallStep is
	// unsound without the rule.
	WallStepMs float64 `json:"wall_step_ms"`
	WallS      float64 `json:"wall_s"`
	// Server and Sysctls are what this run's pod ran with, read back, and
	// ClientCPUs the client's CPU quota in cores as its cgroup says (0
	// when unlimited or unread).
	Server     string            `json:"server"`
	Sysctls    map[string]string `json:"sysctls"`
	ClientCPUs float64           `json:"client_cpus"`
	// SlowOutcomes counts the run's slow clients by outcome
	// (load.Download.Outcome).
	SlowOutcomes map[string]int `json:"slow_outcomes,omitempty"`
	// ConnectMsMax is the slowest connect of the run's held connections
	// (0 for other slow clients): over a second when a full listen
	// backlog dropped a SYN.
	ConnectMsMax float64 `json:"connect_ms_max,omitempty"`
	// WorkerTimeouts counts Gunicorn's "WORKER TIMEOUT" lines in the
	// app's log: workers its arbiter killed during the run.
	WorkerTimeouts int `json:"worker_timeouts"`
	// OOMKilled are the roles the OOM killer hit at their memory limit
	// in a condition that may exhaust memory: a failure of the server.
	OOMKilled []string `json:"oom_killed,omitempty"`
	// Stream is the event stream's delays, when the run read one.
	Stream *Stream `json:"stream,omitempty"`
	// Cut is what a fault that cuts the slow clients part-way did, and
	// what it left (a condition with such a fault only).
	Cut *Cut `json:"cut,omitempty"`
	// Observed is the probe's summary of the run (nil without a probe).
	Observed *Observed `json:"observed,omitempty"`
	// Host is the CPU outside the lab during the run's window, as the
	// host safety stop sampled it (nil when the stop was off).
	Host *HostNoise `json:"host,omitempty"`
}

// HostNoise is the share of the host's CPU used outside the lab over a
// run's load window, from the safety stop's points (package safety).
type HostNoise struct {
	Samples   int     `json:"samples"`
	MaxShare  float64 `json:"max_outside_share"`
	MeanShare float64 `json:"mean_outside_share"`
	// HeldShare is the highest share the host held for HeldWindowS
	// without a break (safety.Held): the figure the redo rule reads.
	HeldShare   float64 `json:"held_outside_share"`
	HeldWindowS float64 `json:"held_window_s"`
}

// Stream is an event stream as its reader saw it: how many events came
// and how long each took from the app's send to the reader's arrival.
type Stream struct {
	Status   int    `json:"status"`
	Encoding string `json:"encoding,omitempty"`
	Events   int    `json:"events"`
	Expected int    `json:"expected"`
	// DelayP50Ms, DelayP95Ms and DelayMaxMs are over the events (for a
	// condition: the median of its runs' p50 and p95, the most of their
	// max); DelayP95MsRuns each run's p95.
	DelayP50Ms     float64   `json:"delay_p50_ms"`
	DelayP95Ms     float64   `json:"delay_p95_ms"`
	DelayMaxMs     float64   `json:"delay_max_ms"`
	DelayP95MsRuns []float64 `json:"delay_p95_ms_runs,omitempty"`
	// FirstEventDelayMs is the first event's delay (for a condition: the
	// median of its runs').
	FirstEventDelayMs float64 `json:"first_event_delay_ms"`
	Error             string  `json:"error,omitempty"`
}

// Request is one /fast request: a line of requests.jsonl.
type Request struct {
	Condition   string  `json:"condition"`
	Run         int     `json:"run"`
	Seq         int     `json:"seq"`
	ScheduledMs float64 `json:"scheduled_ms"`
	LagMs       float64 `json:"lag_ms"`
	LatencyMs   float64 `json:"latency_ms"`
	Status      int     `json:"status"`
	Bytes       int64   `json:"bytes"`
	Error       string  `json:"error,omitempty"`
	// Proto is "h2" for a request of the HTTP/2 series, empty for the
	// HTTP/1.1 one's.
	Proto string `json:"proto,omitempty"`
}

// ProtoH2 is Request.Proto of the HTTP/2 series.
const ProtoH2 = "h2"

// Download is one slow download: an element of downloads.json.
type Download struct {
	Condition string `json:"condition"`
	Run       int    `json:"run"`
	ID        string `json:"id"`
	// Kind is the slow client's kind: "" a slow download, or upload,
	// headers or silent (load's SlowKind).
	Kind     string `json:"kind,omitempty"`
	Status   int    `json:"status"`
	Bytes    int64  `json:"bytes"`
	Expected int64  `json:"expected"`
	Complete bool   `json:"complete"`
	// Outcome is how the slow client was served: complete, truncated,
	// silent-short (a short body presented as whole: data lost silently),
	// reset, timeout, refused or status; a held connection held or
	// closed (load.Download.Outcome).
	Outcome string `json:"outcome"`
	// Messages, Lost and Reordered are a WebSocket consumer's messages
	// received, missing from the server's sequence, and out of its order
	// (load.Download's): no message is lost silently.
	Messages  int `json:"messages,omitempty"`
	Lost      int `json:"lost,omitempty"`
	Reordered int `json:"reordered,omitempty"`
	// Framing is how the response said where its body ends:
	// content-length, chunked or close (load.Framing*).
	Framing string `json:"framing,omitempty"`
	// ReceiveBufferGranted is SO_RCVBUF as the kernel reported it.
	ReceiveBufferGranted int     `json:"receive_buffer_granted"`
	StartMs              float64 `json:"start_ms"`
	// ConnectMs is how long a held connection's connect took (0 for the
	// others): a SYN a full listen backlog dropped is sent again a
	// second later.
	ConnectMs   float64 `json:"connect_ms,omitempty"`
	FirstByteMs float64 `json:"first_byte_ms"`
	CompletionS float64 `json:"completion_s"`
	// WriteS is the app's write duration for this response;
	// WriteComplete whether the app handed over the whole body.
	WriteS        float64 `json:"write_s"`
	WriteComplete bool    `json:"write_complete"`
	WorkerPID     int     `json:"worker_pid"`
	Error         string  `json:"error,omitempty"`
}

// Condition is one condition over its valid runs: an element of
// conditions.json, with the article's figure beside each of ours.
type Condition struct {
	ID string `json:"id"`
	// Server, Path, Downloads, BodyBytes, ReadRate and TCPProfile are the
	// condition's parameters.
	Server    string `json:"server"`
	Path      string `json:"path"`
	Downloads int    `json:"downloads"`
	// Records is how many slow-client records a run of the condition
	// keeps when that is not Downloads: an HTTP/2 client's streams
	// (Downloads x streams); 0 is Downloads (RecordsPerRun).
	Records   int     `json:"records,omitempty"`
	SlowKind  string  `json:"slow_kind,omitempty"`
	BodyBytes int64   `json:"body_bytes"`
	ReadRate  float64 `json:"read_rate_bytes_per_s"`
	// Pacer is what paced the slow readers when not the lab's own
	// reader: "toxiproxy", a hop on the path (engine.PacerToxiproxy).
	Pacer string `json:"pacer,omitempty"`
	// Fault is the fault on the slow clients' path, if any: a Toxiproxy
	// hop's (engine.Faults), and Cut what it did and what it left.
	Fault      string `json:"fault,omitempty"`
	Cut        *Cut   `json:"cut,omitempty"`
	TCPProfile string `json:"tcp_profile"`
	// RanOn, in a merged report, is the shard whose machine ran the
	// condition.
	RanOn *Origin `json:"ran_on,omitempty"`

	// RunsTotal counts every run, RunsSound those the lab measured whole
	// (the request and download counts below are theirs), RunsValid the
	// sound runs in which the server failed nothing (the figures are
	// theirs).
	RunsValid int `json:"runs_valid"`
	RunsSound int `json:"runs_sound"`
	RunsTotal int `json:"runs_total"`
	// ClientCPUs is the most CPU the client had in a run, read back from
	// its cgroup (article A's 0.20; more for loads of more slow clients).
	ClientCPUs float64   `json:"client_cpus"`
	P95Ms      float64   `json:"p95_ms"` // median of the runs' p95
	P95MsRuns  []float64 `json:"p95_ms_runs"`
	// P95MsSound is the median /fast p95 of the sound runs, whether or
	// not their slow clients were served: /fast beside slow clients a
	// limit cut short (the limits table).
	P95MsSound float64 `json:"p95_ms_sound"`
	P95MsMin   float64 `json:"p95_ms_min"`
	P95MsMax   float64 `json:"p95_ms_max"`
	// P95MsH2 is the median of the valid runs' HTTP/2 /fast p95
	// (Run.P95MsH2), P95MsH2Runs each one's; nil and empty without an
	// HTTP/2 series.
	P95MsH2     *float64  `json:"p95_ms_h2,omitempty"`
	P95MsH2Runs []float64 `json:"p95_ms_h2_runs,omitempty"`
	// RequestsOKH2 of RequestsTotalH2 requests of the HTTP/2 series were
	// served, over the sound runs: a failed one fails the condition as
	// one of the HTTP/1.1 series does.
	RequestsOKH2      int     `json:"requests_ok_h2,omitempty"`
	RequestsTotalH2   int     `json:"requests_total_h2,omitempty"`
	P50Ms             float64 `json:"p50_ms"`
	MaxMs             float64 `json:"max_ms"`
	WriteS            float64 `json:"write_s"`
	CompletionS       float64 `json:"completion_s"`
	LagMaxMs          float64 `json:"lag_max_ms"`
	RequestsOK        int     `json:"requests_ok"`
	RequestsTotal     int     `json:"requests_total"`
	DownloadsComplete int     `json:"downloads_complete"`
	DownloadsTotal    int     `json:"downloads_total"`
	// SlowOutcomes counts the slow clients of the sound runs by outcome;
	// WorkerTimeouts the worker timeouts Gunicorn logged in them, and
	// RunsWorkerTimeout the sound runs that logged at least one.
	SlowOutcomes map[string]int `json:"slow_outcomes,omitempty"`
	// ConnectMsMax is the slowest connect of a held connection over the
	// sound runs (Run.ConnectMsMax).
	ConnectMsMax      float64 `json:"connect_ms_max,omitempty"`
	WorkerTimeouts    int     `json:"worker_timeouts"`
	RunsWorkerTimeout int     `json:"runs_worker_timeout"`
	// RunsOOM are the sound runs in which the OOM killer hit the app or
	// the proxy at its memory limit, OOMKilled those roles.
	RunsOOM int `json:"runs_oom,omitempty"`
	// CutMin and CutMax are the fewest and the most slow clients cut
	// short (truncated or reset) in one sound run.
	CutMin    int      `json:"cut_min"`
	CutMax    int      `json:"cut_max"`
	OOMKilled []string `json:"oom_killed,omitempty"`
	// Stream is the event stream over the sound runs that read one.
	Stream *Stream `json:"stream,omitempty"`

	// What the /proc sampler saw, as medians over valid runs: NGINX's
	// temp-file peak (and its largest run), the app's CPU, the app
	// workers' send shares (the least and the most blocked worker of each
	// run), the share of the downloads in which the app's send queue held
	// data, and the worst mismatch between queued and unread bytes at
	// write end. A nil figure was not observed in every valid run: a
	// verdict that reads it fails as missing data, never holds.
	TempfilePeakMiB *float64 `json:"tempfile_peak_mib"`
	// TempfilePeakMiBSoundLeast is the least temp-file peak over the
	// sound runs whose proxy the OOM killer spared, valid or not (a run
	// whose /fast failed still filled, or did not fill, the directory);
	// nil when one of them was not observed, or none was spared.
	TempfilePeakMiBSoundLeast *float64           `json:"tempfile_peak_mib_sound_least,omitempty"`
	TempfilePeakMiBMax        *float64           `json:"tempfile_peak_mib_max"`
	AppCPUPercent             *float64           `json:"app_cpu_percent"`
	ThrottledShare            map[string]float64 `json:"throttled_share"`
	AppWorkerSendShareMin     *float64           `json:"app_worker_send_share_min"`
	AppWorkerSendShareMax     *float64           `json:"app_worker_send_share_max"`
	// AppWorkersHeld and AppWorkers are the medians over valid runs of
	// the app workers a client held and of those seen (Observed's): behind
	// a proxy, the upstream workers its slow clients held.
	AppWorkersHeld *float64 `json:"app_workers_held,omitempty"`
	AppWorkers     *float64 `json:"app_workers,omitempty"`
	// AppWorkersFree is the median over valid runs of each run's workers
	// no client held (its AppWorkers less its AppWorkersHeld).
	AppWorkersFree *float64 `json:"app_workers_free,omitempty"`
	// ProxyMemoryPeakMiB is the median over valid runs of the proxy
	// container's memory peak (cgroup max usage), MiB; nil without a
	// proxy, or when a valid run has no sample of it.
	ProxyMemoryPeakMiB *float64 `json:"proxy_memory_peak_mib"`
	// AppMemoryPeakMiB is the same of the app container; ClientCPUPercent
	// the median of the client's CPU over its window, percent of a core:
	// what the load generator itself cost.
	AppMemoryPeakMiB *float64 `json:"app_memory_peak_mib"`
	// AppMemoryGrowthMiB is the median over valid runs of what the window
	// added to the app container's memory over its first sample: what a
	// server holds for its slow clients (a WebSocket's queued messages).
	AppMemoryGrowthMiB *float64 `json:"app_memory_growth_mib,omitempty"`
	// AppFDsPeak and ProxyFDsPeak are the medians over valid runs of the
	// most descriptors the app's and the proxy's processes held open at
	// once (nil when a valid run did not read them).
	AppFDsPeak       *float64 `json:"app_fds_peak,omitempty"`
	ProxyFDsPeak     *float64 `json:"proxy_fds_peak,omitempty"`
	ClientCPUPercent *float64 `json:"client_cpu_percent"`
	// ProxyWorkerSendShareMax is the median over runs of NGINX's most
	// blocked worker's send share (nil without NGINX).
	ProxyWorkerSendShareMax *float64 `json:"proxy_worker_send_share_max"`
	// AppWaitSites are where the app's workers waited (syscall/wchan,
	// engine.Site), as shares of their samples over every valid run,
	// largest first; nil without sampled workers.
	AppWaitSites []SiteShare `json:"app_wait_sites,omitempty"`
	// SendShares are each valid run's workers' send shares, app and
	// NGINX, as the report's waits table shows them.
	SendShares        []RunSendShares `json:"send_shares"`
	AppSendQBusyShare *float64        `json:"app_send_q_busy_share"`
	// WriteEndMismatchMax is the largest WriteEndQueues.Mismatch over the
	// downloads at their write end (direct paths only), unread counted
	// from the client's own reads over the sample's socket read.
	WriteEndMismatchMax *float64 `json:"write_end_mismatch_max"`
	// WriteEndWorst is the download WriteEndMismatchMax comes from, its
	// sample as the run recorded it.
	WriteEndWorst *WriteEndQueues `json:"write_end_worst,omitempty"`
	// WriteEndUnreadBytes and WriteEndUnreadMaxBytes are, per download,
	// what the path held when the app's write ended (the bytes its client
	// had not read yet): per run the mean and the largest over the
	// downloads, then the median over valid runs.
	WriteEndUnreadBytes    *float64 `json:"write_end_unread_bytes"`
	WriteEndUnreadMaxBytes *float64 `json:"write_end_unread_max_bytes"`
	// PathPeakBytes is the median over valid runs of the most the path's
	// sockets held at once (Observed.PathPeakBytes), for all downloads.
	PathPeakBytes *float64 `json:"path_peak_bytes"`
	// AcceptQueuePeak is the median over valid runs of the most
	// connections waiting at once in the accept queues (Observed).
	AcceptQueuePeak *float64 `json:"accept_queue_peak"`
	// HopPeakBytes are, per hop, the median over valid runs of the hop's
	// peak send plus receive queue.
	HopPeakBytes map[probe.Hop]float64 `json:"hop_peak_bytes,omitempty"`

	ArticleP95Ms       float64   `json:"article_p95_ms"`
	ArticleP95MsRange  []float64 `json:"article_p95_ms_range,omitempty"`
	ArticleWriteS      float64   `json:"article_write_s,omitempty"`
	ArticleCompletionS float64   `json:"article_completion_s,omitempty"`
}

// Claim is one verdict checked on our measurements: an element of
// claims.json.
type Claim struct {
	ID string `json:"id"`
	// Kind is "article" (what an article states or infers) or "harness"
	// (a check of the lab's own instruments).
	Kind string `json:"kind"`
	Text string `json:"text"`
	// Status is holds, fails, missing (a condition it reads ran, but a
	// value it needs is missing or empty: a failure), not-run (a
	// condition it reads did not run, e.g. go test -run picked others) or
	// too-busy (a condition it reads could not get an undisturbed run:
	// not judged, and a failure of the series).
	Status string `json:"status"`
	// Holds is the verdict; Evaluated is false for missing, not-run and
	// too-busy.
	Holds     bool     `json:"holds"`
	Evaluated bool     `json:"evaluated"`
	Measured  float64  `json:"measured"`
	Threshold string   `json:"threshold"`
	Unit      string   `json:"unit"`
	Needs     []string `json:"needs"`
	Note      string   `json:"note,omitempty"`
	// Expected is StatusFails for a verdict meant to fail (an example
	// stack that shows what the lab catches); empty for every other.
	Expected string `json:"expected,omitempty"`
}

// AsExpected is whether c failed as it was meant to.
func (c Claim) AsExpected() bool {
	return c.Expected == StatusFails && c.Status == StatusFails
}

// The statuses of a Claim.
const (
	StatusHolds   = "holds"
	StatusFails   = "fails"
	StatusMissing = "missing"
	StatusNotRun  = "not-run"
	// StatusTooBusy: a condition it reads could not get an undisturbed
	// run (package disturb); nothing was judged.
	StatusTooBusy = "too-busy"
)

// JSONLines is a Reporter of one JSON document per line.
func JSONLines[T any](rows []T) Reporter {
	return func(w io.Writer) error {
		enc := json.NewEncoder(w)
		for _, r := range rows {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
		return nil
	}
}

// Benchfmt is a Reporter of runs in Go benchmark format, one line per
// valid run, so benchstat can compare two series:
//
//	BenchmarkArticleA/direct-2dl 1 5945.11 p95-ms 1.2 p50-ms 6.56 write-s 8.01 completion-s
func Benchfmt(env Environment, runs []Run) Reporter {
	return func(w io.Writer) error {
		fmt.Fprintf(w, "goos: linux\ngoarch: %s\npkg: wsgilab/bench\ncpu: %s\n", env.Docker.Arch, env.Versions.CPUModel)
		fmt.Fprintf(w, "commit: %s\n", env.GitCommit)
		sorted := slices.Clone(runs)
		slices.SortStableFunc(sorted, func(a, b Run) int { return strings.Compare(a.Condition, b.Condition) })
		for _, r := range sorted {
			if !r.Valid {
				continue
			}
			fmt.Fprintf(w, "BenchmarkArticleA/%s 1 %.4f p95-ms %.4f p50-ms %.4f max-ms %.4f lag-max-ms",
				r.Condition, r.P95Ms, r.P50Ms, r.MaxMs, r.LagMaxMs)
			if r.DownloadsTotal > 0 {
				fmt.Fprintf(w, " %.4f write-s %.4f completion-s", r.WriteS, r.CompletionS)
			}
			fmt.Fprintln(w)
		}
		return nil
	}
}

// Series is series.json: the matrix as a whole, for its cost.
type Series struct {
	StartedAt time.Time `json:"started_at"`
	Runs      int       `json:"runs"`
	RunsValid int       `json:"runs_valid"`
	// WallS is the series' wall time so far, pods' start and teardown
	// included; WindowsS the sum of the runs' load windows; Overhead their
	// ratio (the goal: at most 1.2).
	WallS    float64 `json:"wall_s"`
	WindowsS float64 `json:"windows_s"`
	Overhead float64 `json:"overhead"`
	// LagMaxMs and LagP99MaxMs are the worst schedule lag over all runs.
	LagMaxMs    float64 `json:"lag_max_ms"`
	LagP99MaxMs float64 `json:"lag_p99_max_ms"`
}

// NewSeries sums runs into a Series that started at start.
func NewSeries(start time.Time, runs []Run) Series {
	s := Series{StartedAt: start.UTC(), Runs: len(runs), WallS: time.Since(start).Seconds()}
	for _, r := range runs {
		if r.Valid {
			s.RunsValid++
		}
		s.WindowsS += r.WindowS
		s.LagMaxMs = max(s.LagMaxMs, r.LagMaxMs)
		s.LagP99MaxMs = max(s.LagP99MaxMs, r.LagP99Ms)
	}
	if s.WindowsS > 0 {
		s.Overhead = s.WallS / s.WindowsS
	}
	return s
}

// RunSendShares are one run's workers' send shares, each sorted from the
// most blocked down.
type RunSendShares struct {
	Run   int       `json:"run"`
	App   []float64 `json:"app"`
	Proxy []float64 `json:"proxy,omitempty"`
}

// Float is a pointer to v, for the optional figures of Condition.
func Float(v float64) *float64 { return &v }

// RecordsPerRun is how many slow-client records a sound run of c keeps:
// Records, or Downloads.
func (c Condition) RecordsPerRun() int {
	if c.Records > 0 {
		return c.Records
	}
	return c.Downloads
}
