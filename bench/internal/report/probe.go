package report

import (
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

	"wsgilab/bench/internal/load"
	"wsgilab/bench/internal/probe"
)

// Observed is what the probe saw during one run, summarized; runs.json
// carries it as the run's "observed" field.
type Observed struct {
	// TempfilePeakMiB is the peak logical size of NGINX's open temp files.
	TempfilePeakMiB float64 `json:"tempfile_peak_mib"`
	// Resources are per container role over the load window.
	Resources map[string]ResourceSummary `json:"resources"`
	// Workers are the app's and NGINX's worker processes.
	Workers []WorkerWaits `json:"workers"`
	// Hops are the queue peaks per socket hop.
	Hops map[probe.Hop]HopPeak `json:"hops"`
	// AppSendQBusyShare is the share of samples, from the downloads' start
	// to the app's last write end, in which the app's sockets to its peer
	// (client or NGINX) held unsent or unacknowledged bytes.
	AppSendQBusyShare float64 `json:"app_send_q_busy_share"`
	// AtWriteEnd is, per download, the path's queues at the first sample
	// after the app's write ended.
	AtWriteEnd []WriteEndQueues `json:"at_write_end"`
	Probe      ProbeCost        `json:"probe"`
	Errors     []string         `json:"errors,omitempty"`
}

// ResourceSummary is one container's cgroup usage over the window.
type ResourceSummary struct {
	CPUPercent     float64 `json:"cpu_percent"`
	ThrottledShare float64 `json:"throttled_share"`
	ThrottledMs    float64 `json:"throttled_ms"`
	MaxMemoryMiB   float64 `json:"max_memory_mib"`
	Samples        int     `json:"samples"`
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
	// AtMs is the sample's time from the run's start.
	AtMs float64 `json:"at_ms"`
	// QueuedBytes sums, per hop, the queues of the path at that sample
	// (direct: this download's two sockets; via NGINX: all sockets of the
	// path, both downloads).
	QueuedBytes int64 `json:"queued_bytes"`
	// Hops is the queued bytes per hop at that sample.
	Hops map[probe.Hop]int64 `json:"hops"`
	// UnreadBytes is the body size minus what the paced client had read.
	UnreadBytes int64 `json:"unread_bytes"`
	// OwnSockets is true when QueuedBytes counts this download's sockets
	// only, so it should equal UnreadBytes.
	OwnSockets bool `json:"own_sockets"`
}

// ProbeCost is what sampling cost, in the probe's own container.
type ProbeCost struct {
	CPUPercent  float64 `json:"cpu_percent"`
	Ticks       int     `json:"ticks"`
	Missed      int     `json:"missed"`
	SampleP50Ms float64 `json:"sample_p50_ms"`
	SampleMaxMs float64 `json:"sample_max_ms"`
}

// WriteEnd is when the app handed over the last byte of a download.
type WriteEnd struct {
	ID       string
	UnixNano int64
}

// Observe summarizes a probe series over the load window of res; ends are
// the app's write ends, matched to res's downloads by ID.
func Observe(s probe.Series, res load.Result, ends []WriteEnd) Observed {
	o := Observed{Resources: map[string]ResourceSummary{}, Hops: map[probe.Hop]HopPeak{}, Errors: s.Errors,
		Workers: []WorkerWaits{}, AtWriteEnd: []WriteEndQueues{}}
	from, to := res.StartUnixNano, res.StartUnixNano+int64(res.Elapsed)
	in := func(t int64) bool { return t >= from && t <= to }

	for _, t := range s.TempFiles {
		if in(t.UnixNano) {
			o.TempfilePeakMiB = max(o.TempfilePeakMiB, float64(t.TotalBytes)/(1<<20))
		}
	}

	series := map[string]*probe.UsageSeries{}
	for _, r := range s.Resources {
		if !in(r.UnixNano) {
			continue
		}
		if series[r.Role] == nil {
			series[r.Role] = &probe.UsageSeries{}
		}
		series[r.Role].Add(time.Duration(r.UnixNano-from), r.Usage)
	}
	for role, us := range series {
		us.Close()
		o.Resources[role] = ResourceSummary{CPUPercent: us.CPUPercent, ThrottledShare: us.ThrottledShare,
			ThrottledMs: float64(us.ThrottledTime) / 1e6, MaxMemoryMiB: float64(us.MaxMemoryBytes) / (1 << 20),
			Samples: us.Samples}
	}

	workers := map[int]*WorkerWaits{}
	for _, p := range s.Processes {
		if p.Worker && (p.Role == "app" || p.Role == "proxy") {
			workers[p.PID] = &WorkerWaits{PID: p.PID, Role: p.Role, Comm: p.Comm}
		}
	}
	for _, ws := range s.Waits {
		if !in(ws.UnixNano) {
			continue
		}
		// A worker counts as sending when any of its threads is: a gthread
		// worker sends from its pool threads.
		state := map[int]probe.WaitState{}
		for _, w := range ws.Waits {
			if workers[w.PID] == nil {
				continue
			}
			if rank(w.State) > rank(state[w.PID]) {
				state[w.PID] = w.State
			}
		}
		for pid, st := range state {
			w := workers[pid]
			w.Samples++
			switch st {
			case probe.WaitSend:
				w.SendShare++
			case probe.WaitIdle:
				w.IdleShare++
			case probe.WaitRunning:
				w.RunningShare++
			default:
				w.OtherShare++
			}
		}
	}
	for _, w := range workers {
		if w.Samples > 0 {
			n := float64(w.Samples)
			w.SendShare, w.IdleShare, w.RunningShare, w.OtherShare = w.SendShare/n, w.IdleShare/n, w.RunningShare/n, w.OtherShare/n
		}
		o.Workers = append(o.Workers, *w)
	}
	slices.SortFunc(o.Workers, func(a, b WorkerWaits) int { return a.PID - b.PID })

	var lastEnd int64
	for _, e := range ends {
		lastEnd = max(lastEnd, e.UnixNano)
	}
	appHop := probe.HopAppToClient
	if s.Spec.ProxyPort != 0 {
		appHop = probe.HopAppToNginx
	}
	var busy, busyOf int
	for _, ss := range s.Sockets {
		if !in(ss.UnixNano) {
			continue
		}
		for h, q := range ss.Hops {
			p := o.Hops[h]
			p.PeakSendQBytes = max(p.PeakSendQBytes, q.SendQ)
			p.PeakRecvQBytes = max(p.PeakRecvQBytes, q.RecvQ)
			o.Hops[h] = p
		}
		if len(res.Downloads) > 0 && ss.UnixNano <= lastEnd {
			busyOf++
			if ss.Hops[appHop].SendQ > 0 {
				busy++
			}
		}
	}
	if busyOf > 0 {
		o.AppSendQBusyShare = float64(busy) / float64(busyOf)
	}

	for _, d := range res.Downloads {
		i := slices.IndexFunc(ends, func(e WriteEnd) bool { return e.ID == d.ID })
		if i < 0 || d.FirstByteAt == 0 {
			continue
		}
		j := slices.IndexFunc(s.Sockets, func(ss probe.SocketSample) bool { return ss.UnixNano >= ends[i].UnixNano })
		if j < 0 {
			continue
		}
		ss := s.Sockets[j]
		q := WriteEndQueues{ID: d.ID, AtMs: float64(ss.UnixNano-from) / 1e6, Hops: map[probe.Hop]int64{},
			OwnSockets: s.Spec.ProxyPort == 0}
		for _, c := range ss.Conns {
			// Direct, a download's sockets are known by the client's port;
			// behind NGINX the upstream side cannot be told apart, so the
			// whole path counts.
			if s.Spec.ProxyPort == 0 && c.LocalPort != d.LocalPort && c.RemotePort != d.LocalPort {
				continue
			}
			q.Hops[c.Hop] += c.SendQ + c.RecvQ
			q.QueuedBytes += c.SendQ + c.RecvQ
		}
		readSec := float64(ss.UnixNano-from-int64(d.FirstByteAt)) / 1e9
		read := math.Min(float64(d.Expected), max(0, res.Spec.DownloadRate*readSec))
		q.UnreadBytes = d.Expected - int64(read)
		o.AtWriteEnd = append(o.AtWriteEnd, q)
	}

	if s.Overhead.Wall > 0 {
		o.Probe = ProbeCost{CPUPercent: 100 * float64(s.Overhead.CPUTime) / float64(s.Overhead.Wall),
			Ticks: s.Overhead.Ticks, Missed: s.Overhead.Missed,
			SampleP50Ms: float64(s.Overhead.SampleP50) / 1e6, SampleMaxMs: float64(s.Overhead.SampleMax) / 1e6}
	}
	return o
}

// rank orders wait states so a process takes its most telling thread's.
func rank(s probe.WaitState) int {
	return map[probe.WaitState]int{probe.WaitOther: 1, probe.WaitIdle: 2, probe.WaitRunning: 3, probe.WaitSend: 4}[s]
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

// Rows flattens s for condition and run.
func Rows(condition string, run int, s probe.Series, loadStart int64) ProbeRows {
	var r ProbeRows
	ms := func(t int64) float64 { return float64(t-loadStart) / 1e6 }
	for _, x := range s.Resources {
		r.Resources = append(r.Resources, ResourceRow{Condition: condition, Run: run, TMs: ms(x.UnixNano),
			Container: x.Role, CPUUsageNs: int64(x.Usage.CPUUsage), NrPeriods: x.Usage.NrPeriods,
			NrThrottled: x.Usage.NrThrottled, ThrottledNs: int64(x.Usage.ThrottledTime),
			MemoryBytes: x.Usage.MemoryBytes, MemoryPeakBytes: x.Usage.MemoryPeakBytes})
	}
	for _, x := range s.Sockets {
		for _, h := range slices.Sorted(maps.Keys(x.Hops)) {
			q := x.Hops[h]
			r.Sockets = append(r.Sockets, SocketRow{Condition: condition, Run: run, TMs: ms(x.UnixNano), Hop: h,
				SendQBytes: q.SendQ, RecvQBytes: q.RecvQ, Conns: q.Conns})
		}
	}
	role := map[int]string{}
	for _, p := range s.Processes {
		role[p.PID] = p.Role
	}
	for _, x := range s.Waits {
		for _, w := range x.Waits {
			name := w.SyscallName
			if name == "" {
				name = strconv.Itoa(w.Syscall)
			}
			r.Waits = append(r.Waits, WaitRow{Condition: condition, Run: run, TMs: ms(x.UnixNano), Role: role[w.PID],
				PID: w.PID, TID: w.TID, Comm: w.Comm, Wchan: w.Wchan, Syscall: name, State: w.State})
		}
	}
	for _, x := range s.TempFiles {
		r.TempFiles = append(r.TempFiles, TempFileRow{Condition: condition, Run: run, TMs: ms(x.UnixNano),
			TotalBytes: x.TotalBytes, Files: x.Files})
	}
	return r
}
