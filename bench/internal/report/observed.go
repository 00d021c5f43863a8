package report

import (
	"fmt"
	"slices"
	"strings"

	"wsgilab/bench/internal/probe"
)

// Observed is what the /proc sampler saw during one run, summarized; runs.json
// carries it as the run's "observed" field.
type Observed struct {
	// TempfilePeakMiB is the peak logical size of NGINX's open temp files
	// over TempfileSamples samples in the window (none on a direct path,
	// where there is no NGINX to sample).
	TempfilePeakMiB float64 `json:"tempfile_peak_mib"`
	TempfileSamples int     `json:"tempfile_samples"`
	// TempFilesAtEnd is how many temp files NGINX held open at the
	// window's last sample of them (nil with none).
	TempFilesAtEnd *int `json:"temp_files_at_end,omitempty"`
	// Proxied is true when a proxy (a front door) was in the path.
	Proxied bool `json:"proxied"`
	// Spills is true when the proxy in the path buffers to disk (its
	// door has a spill dir, whose open files the sampler counts).
	Spills bool `json:"spills,omitempty"`
	// Resources are per container role over the load window.
	Resources map[string]ResourceSummary `json:"resources"`
	// ClientStall is how much of the /fast requests' p95 may be the
	// client's own: nil when the client was not sampled or made no
	// request.
	ClientStall *ClientStall `json:"client_stall,omitempty"`
	// Workers are the app's and NGINX's worker processes.
	Workers []WorkerWaits `json:"workers"`
	// AppWorkers counts the app's workers the sampler saw in the window,
	// AppWorkersHeld those a client held: whose HeldShare reached
	// engine.WorkerHeldShare. Behind a proxy the proxy is the app's
	// client, so these are the upstream workers held.
	AppWorkers     int `json:"app_workers"`
	AppWorkersHeld int `json:"app_workers_held"`
	// Hops are the queue peaks per socket hop.
	Hops map[probe.Hop]HopPeak `json:"hops"`
	// AcceptQueuePeak is the most connections that waited at once in the
	// listening sockets' accept queues (the app's and NGINX's): requests
	// no worker had taken yet.
	AcceptQueuePeak int `json:"accept_queue_peak"`
	// PathPeakBytes is the most the path's sockets held at once: the
	// largest sum over every hop's send and receive queues in one sample
	// (the per-hop peaks above may fall in different samples).
	PathPeakBytes int64 `json:"path_peak_bytes"`
	// AppSendQBusyShare is the share of samples, from the downloads' start
	// to the app's last write end, in which the app's sockets to its peer
	// (client or NGINX) held unsent or unacknowledged bytes.
	AppSendQBusyShare *float64 `json:"app_send_q_busy_share,omitempty"`
	// AtWriteEnd is, per download, the path's queues at the first sample
	// after the app's write ended.
	AtWriteEnd []WriteEndQueues `json:"at_write_end"`
	Probe      ProbeCost        `json:"probe"`
	Errors     []string         `json:"errors,omitempty"`
}

// ClientStall is what the client's own stalls may have added to the /fast
// p95. Each request is charged the client's throttled time (cpu.stat's,
// summed over CPUs) between the sampler's ticks around it, from its start
// to its end (probe.UsageSeries.ThrottledOver), or the stretches its
// hiccup meter saw it held within that span (load.HiccupOver) when that is
// more: a request cannot have waited on the client for longer than the
// client was held.
// P95LessMs is the p95 of the latencies less that charge (at least 0),
// what is left if each request's charge was all the client's, and
// P95ReachMs the p95 less that: how far the client's stalls may reach
// into the figure the verdicts read. A stall between requests, or under
// one that waits seconds on a held worker, reaches little; one under the
// requests that make a fast run's p95 reaches it whole.
type ClientStall struct {
	P95Ms      float64 `json:"p95_ms"`
	P95LessMs  float64 `json:"p95_less_ms"`
	P95ReachMs float64 `json:"p95_reach_ms"`
	// Charged counts the requests charged any throttled time, and
	// MostChargedMs is the largest charge.
	Charged       int     `json:"charged"`
	MostChargedMs float64 `json:"most_charged_ms"`
	// Metered says the client ran its hiccup meter (load.Spec.HiccupEvery);
	// Hiccups counts its late wakes over the load, HiccupsLost those past
	// its record (whose requests are charged whole), and WorstHiccupMs is
	// the latest of its wakes, ms after it was due.
	Metered       bool    `json:"metered,omitempty"`
	Hiccups       int     `json:"hiccups,omitempty"`
	HiccupsLost   int     `json:"hiccups_lost,omitempty"`
	WorstHiccupMs float64 `json:"worst_hiccup_ms,omitempty"`
}

// ResourceSummary is one container's cgroup usage over the window.
type ResourceSummary struct {
	CPUPercent     float64 `json:"cpu_percent"`
	ThrottledShare float64 `json:"throttled_share"`
	ThrottledMs    float64 `json:"throttled_ms"`
	MaxMemoryMiB   float64 `json:"max_memory_mib"`
	// MemoryGrowthMiB is the most the window added to the container's
	// memory over its first sample (probe.UsageSeries.MemoryGrowthBytes).
	MemoryGrowthMiB float64 `json:"memory_growth_mib"`
	Samples         int     `json:"samples"`
	// MaxFDs is the most descriptors the role's processes held open at
	// once (the app's and the proxy's; 0 when unread).
	MaxFDs int `json:"max_fds,omitempty"`
	// FDsBefore is the descriptors reaching a socket or a path
	// (probe.FDSample.Held) the role's processes held once the count had
	// stayed the same for engine.FDQuietSpan before a cutting fault's
	// load (probe.Series.QuietFDs), FDsAtEnd the fewest in the window's
	// last engine.FDSettleSpan (a /fast request holds one for a few ms):
	// one held at the end that was not before is a leak (Cut.FDsLeaked).
	// Pipes and anonymous inodes (eventfd, epoll) are left out: an event
	// loop makes some on first use. Nil when not counted.
	FDsBefore *int `json:"fds_before,omitempty"`
	FDsAtEnd  *int `json:"fds_at_end,omitempty"`
}

// WorkerWaits is the share of samples a worker spent in each state.
type WorkerWaits struct {
	PID          int     `json:"pid"`
	Role         string  `json:"role"`
	Comm         string  `json:"comm"`
	Samples      int     `json:"samples"`
	SendShare    float64 `json:"send_share"`
	IdleShare    float64 `json:"idle_share"`
	RunningShare float64 `json:"running_share"`
	OtherShare   float64 `json:"other_share"`
	// HeldShare is the share of samples in which the worker waited to
	// write to its client: in a blocking send (SendShare), or, as uWSGI
	// writes, in poll(2) for its socket to take more (engine.HeldSites).
	HeldShare float64 `json:"held_share"`
	// Sites are the shares of samples per wait site, "syscall/wchan"
	// (engine.Site), of the worker's busiest thread in each sample: where
	// the worker waited, beyond the four states above.
	Sites map[string]float64 `json:"sites"`
}

// HopPeak is a hop's largest queues in the window.
type HopPeak struct {
	PeakSendQBytes int64 `json:"peak_send_q_bytes"`
	PeakRecvQBytes int64 `json:"peak_recv_q_bytes"`
}

// WriteEndQueues checks one download at the end of the app's write: once
// the app has handed over every byte, the bytes not yet read by the client
// are all in the path's queues.
type WriteEndQueues struct {
	ID string `json:"id"`
	// AtMs is the sample's time from the run's start; EndMs the app's
	// write end's.
	AtMs  float64 `json:"at_ms"`
	EndMs float64 `json:"end_ms"`
	// QueuedBytes sums, per hop, the queues of the path at that sample
	// (direct: this download's two sockets; via NGINX: all sockets of the
	// path, both downloads).
	QueuedBytes int64 `json:"queued_bytes"`
	// Hops is the queued bytes per hop at that sample.
	Hops map[probe.Hop]int64 `json:"hops"`
	// ReadMs is how long the sample's read of the socket table took: each
	// socket was read at some instant of it.
	ReadMs float64 `json:"read_ms"`
	// UnreadBytes is the body size minus what the paced client had read
	// when the sample's read began; UnreadAfterBytes, when it ended.
	UnreadBytes      int64 `json:"unread_bytes"`
	UnreadAfterBytes int64 `json:"unread_after_bytes"`
	// UnreadAtEndBytes is the body size minus what the client had read at
	// the write's end itself: what this download's path held then, the
	// buffer model's capacity.
	UnreadAtEndBytes int64 `json:"unread_at_end_bytes"`
	// OwnSockets is true when QueuedBytes counts this download's sockets
	// only, so it should equal UnreadBytes.
	OwnSockets bool `json:"own_sockets"`
	// WallStepMs is the run's wall-clock step (load.Result.WallStep):
	// the unread bytes, read at the sample's wall-clock time from the
	// client's monotonic marks, are off by the client's rate times it.
	WallStepMs float64 `json:"wall_step_ms"`
}

// Mismatch is how far QueuedBytes lies outside what the client had not
// read over the sample's read, [UnreadAfterBytes, UnreadBytes], as a share
// of UnreadBytes: 0 when the queues hold exactly the unread bytes.
func (q WriteEndQueues) Mismatch() float64 {
	lo, hi := min(q.UnreadAfterBytes, q.UnreadBytes), q.UnreadBytes
	var off int64
	switch {
	case q.QueuedBytes > hi:
		off = q.QueuedBytes - hi
	case q.QueuedBytes < lo:
		off = lo - q.QueuedBytes
	}
	return float64(off) / float64(q.UnreadBytes)
}

// Describe says what q compared, for a verdict's note: "direct-2dl-r1-dl2
// 49.8 ms after the write end: queued 2916196 B (app->client 2908163,
// client<-app 8033) against unread 2908162 to 2908162 B over a 0.24 ms
// read; the run's wall clock stepped 0.004 ms". A record from before
// EndMs and WallStepMs gives the sample's time from the run's start.
func (q WriteEndQueues) Describe() string {
	hops := make([]string, 0, len(q.Hops))
	for h, b := range q.Hops {
		hops = append(hops, fmt.Sprintf("%s %d", h, b))
	}
	slices.Sort(hops)
	when := fmt.Sprintf("%.1f ms after the write end", q.AtMs-q.EndMs)
	if q.EndMs == 0 {
		when = fmt.Sprintf("%.1f ms into the run", q.AtMs)
	}
	return fmt.Sprintf("%s %s: queued %d B (%s) against unread %d to %d B over a %.2f ms read; the run's wall clock stepped %.3f ms",
		q.ID, when, q.QueuedBytes, strings.Join(hops, ", "), q.UnreadAfterBytes, q.UnreadBytes, q.ReadMs, q.WallStepMs)
}

// ProbeCost is what sampling cost, in the probe's own container.
type ProbeCost struct {
	CPUPercent  float64 `json:"cpu_percent"`
	Ticks       int     `json:"ticks"`
	Missed      int     `json:"missed"`
	SampleP50Ms float64 `json:"sample_p50_ms"`
	SampleMaxMs float64 `json:"sample_max_ms"`
	// SocketSource is how the socket table was read: netlink (sock_diag)
	// or proc (/proc/net/tcp, the fallback); SocketFallback why the probe
	// fell back, when it did.
	SocketSource   string `json:"socket_source,omitempty"`
	SocketFallback string `json:"socket_fallback,omitempty"`
}

// Rows of the probe's JSON-lines reports, each keyed by condition, run and
// the time from the run's start.

// ResourceRow is a line of resources.jsonl.
type ResourceRow struct {
	Condition       string  `json:"condition"`
	Run             int     `json:"run"`
	TMs             float64 `json:"t_ms"`
	Container       string  `json:"container"`
	CPUUsageNs      int64   `json:"cpu_usage_ns"`
	NrPeriods       int64   `json:"nr_periods"`
	NrThrottled     int64   `json:"nr_throttled"`
	ThrottledNs     int64   `json:"throttled_ns"`
	MemoryBytes     int64   `json:"memory_bytes"`
	MemoryPeakBytes int64   `json:"memory_peak_bytes"`
}

// SocketRow is a line of sockets.jsonl: one hop at one instant.
type SocketRow struct {
	Condition  string    `json:"condition"`
	Run        int       `json:"run"`
	TMs        float64   `json:"t_ms"`
	Hop        probe.Hop `json:"hop"`
	SendQBytes int64     `json:"send_q_bytes"`
	RecvQBytes int64     `json:"recv_q_bytes"`
	Conns      int       `json:"conns"`
}

// WaitRow is a line of waits.jsonl: one thread at one instant.
type WaitRow struct {
	Condition string          `json:"condition"`
	Run       int             `json:"run"`
	TMs       float64         `json:"t_ms"`
	Role      string          `json:"role"`
	PID       int             `json:"pid"`
	TID       int             `json:"tid"`
	Comm      string          `json:"comm"`
	Wchan     string          `json:"wchan"`
	Syscall   string          `json:"syscall"`
	State     probe.WaitState `json:"state"`
}

// TempFileRow is a line of tempfiles.jsonl.
type TempFileRow struct {
	Condition  string  `json:"condition"`
	Run        int     `json:"run"`
	TMs        float64 `json:"t_ms"`
	TotalBytes int64   `json:"total_bytes"`
	Files      int     `json:"files"`
}

// ProbeRows flattens a series into the four reports' rows; t is measured
// from the load's start (negative before it).
type ProbeRows struct {
	Resources []ResourceRow
	Sockets   []SocketRow
	Waits     []WaitRow
	TempFiles []TempFileRow
}

// Append adds x's rows to r's.
func (r *ProbeRows) Append(x ProbeRows) {
	r.Resources = append(r.Resources, x.Resources...)
	r.Sockets = append(r.Sockets, x.Sockets...)
	r.Waits = append(r.Waits, x.Waits...)
	r.TempFiles = append(r.TempFiles, x.TempFiles...)
}
