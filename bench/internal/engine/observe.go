package engine

import (
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"wsgilab/bench/internal/load"
	"wsgilab/bench/internal/podspec"
	"wsgilab/bench/internal/probe"
	"wsgilab/bench/internal/report"
	"wsgilab/bench/internal/stats"
)

// WriteEnd is when the app handed over the last byte of a download.
type WriteEnd struct {
	ID       string
	UnixNano int64
}

// FDSettleSpan is the span at the window's end over which a role's
// descriptors are counted at their fewest (report.ResourceSummary.FDsAtEnd):
// a /fast request every 125 ms holds a descriptor for a few ms, a leaked
// one holds it throughout. FDQuietSpan is how long they must stay the
// same before a cutting fault's load starts (probe.SamplerSpec.QuietFor),
// the count FDsBefore holds: a process listing's period, so a worker
// still starting is seen.
const (
	FDSettleSpan = time.Second
	FDQuietSpan  = time.Second
)

// fewest is the lesser of *p and n, n when p is nil.
func fewest(p *int, n int) *int {
	if p != nil && *p <= n {
		return p
	}
	return &n
}

// Observe summarizes a probe series over the load window of res; ends are
// the app's write ends, matched to res's downloads by ID.
func Observe(s probe.Series, res load.Result, ends []WriteEnd) report.Observed {
	o := report.Observed{Resources: map[string]report.ResourceSummary{}, Hops: map[probe.Hop]report.HopPeak{}, Errors: s.Errors,
		Workers: []report.WorkerWaits{}, AtWriteEnd: []report.WriteEndQueues{}}
	from, to := res.StartUnixNano, res.StartUnixNano+int64(res.Elapsed)
	in := func(t int64) bool { return t >= from && t <= to }

	o.Proxied = s.Spec.ProxyPort != 0
	o.Spills = o.Proxied && s.Spec.TempDir != ""
	for _, t := range s.TempFiles {
		if in(t.UnixNano) {
			o.TempfileSamples++
			o.TempfilePeakMiB = max(o.TempfilePeakMiB, float64(t.TotalBytes)/(1<<20))
			o.TempFilesAtEnd = &t.Files
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
		o.Resources[role] = report.ResourceSummary{CPUPercent: us.CPUPercent, ThrottledShare: us.ThrottledShare,
			ThrottledMs: float64(us.ThrottledTime) / 1e6, MaxMemoryMiB: float64(us.MaxMemoryBytes) / (1 << 20),
			MemoryGrowthMiB: float64(us.MemoryGrowthBytes) / (1 << 20), Samples: us.Samples}
	}
	client := series[podspec.RoleClient]
	if client != nil && client.Samples < 2 { // no throttled time between samples
		client = nil
	}
	if len(res.Fast) > 0 && (client != nil || res.Spec.HiccupEvery > 0) {
		o.ClientStall = clientStall(client, res)
	}
	for _, f := range s.FDs {
		r, ok := o.Resources[f.Role]
		if !ok {
			continue
		}
		if in(f.UnixNano) {
			r.MaxFDs = max(r.MaxFDs, f.FDs)
		}
		// A leak holds a socket or a path; an event loop's own pipes and
		// eventfds, some made on first use, are left out. A sample the
		// sampler did not sort (probe.FDSample.Classified) counts none.
		// The count before the load is the sampler's own, once quiet.
		if f.Classified() && in(f.UnixNano) && f.UnixNano >= to-int64(FDSettleSpan) {
			r.FDsAtEnd = fewest(r.FDsAtEnd, f.Held())
		}
		o.Resources[f.Role] = r
	}
	for role, n := range s.QuietFDs {
		if r, ok := o.Resources[role]; ok {
			r.FDsBefore = &n
			o.Resources[role] = r
		}
	}

	workers := map[int]*report.WorkerWaits{}
	for _, p := range s.Processes {
		if p.Worker && (p.Role == "app" || p.Role == "proxy") {
			workers[p.PID] = &report.WorkerWaits{PID: p.PID, Role: p.Role, Comm: p.Comm, Sites: map[string]float64{}}
		}
	}
	for _, ws := range s.Waits {
		if !in(ws.UnixNano) {
			continue
		}
		// A worker counts as sending when any of its threads is: a gthread
		// worker sends from its pool threads.
		state, site, held := map[int]probe.WaitState{}, map[int]string{}, map[int]bool{}
		for _, w := range ws.Waits {
			if workers[w.PID] == nil {
				continue
			}
			if rank(w.State) > rank(state[w.PID]) {
				state[w.PID], site[w.PID] = w.State, Site(w)
			}
			// Held by any of its threads, whichever the state names.
			held[w.PID] = held[w.PID] || w.State == probe.WaitSend || heldSite(Site(w))
		}
		for pid, st := range state {
			w := workers[pid]
			w.Samples++
			w.Sites[site[pid]]++
			if held[pid] {
				w.HeldShare++
			}
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
			w.HeldShare /= n
			if w.Role == "app" {
				o.AppWorkers++
				if w.HeldShare >= WorkerHeldShare {
					o.AppWorkersHeld++
				}
			}
			for k := range w.Sites {
				w.Sites[k] /= n
			}
		}
		o.Workers = append(o.Workers, *w)
	}
	slices.SortFunc(o.Workers, func(a, b report.WorkerWaits) int { return a.PID - b.PID })

	var lastEnd int64
	for _, e := range ends {
		lastEnd = max(lastEnd, e.UnixNano)
	}
	appHop := probe.HopAppToClient
	if s.Spec.ProxyPort != 0 {
		appHop = probe.HopAppToNginx
	}
	// Only slow readers make the app's send queue telling.
	reads := len(res.Downloads) > 0 && !load.Holds(res.Spec.SlowKind) && res.Spec.SlowKind != load.KindUpload
	var busy, busyOf int
	for _, ss := range s.Sockets {
		if !in(ss.UnixNano) {
			continue
		}
		var total int64
		for h, q := range ss.Hops {
			if h != probe.HopListen {
				total += q.SendQ + q.RecvQ
			}
			p := o.Hops[h]
			p.PeakSendQBytes = max(p.PeakSendQBytes, q.SendQ)
			p.PeakRecvQBytes = max(p.PeakRecvQBytes, q.RecvQ)
			o.Hops[h] = p
		}
		o.PathPeakBytes = max(o.PathPeakBytes, total)
		o.AcceptQueuePeak = max(o.AcceptQueuePeak, ss.Hops[probe.HopListen].AcceptQueue)
		if reads && ss.UnixNano <= lastEnd {
			busyOf++
			if ss.Hops[appHop].SendQ > 0 {
				busy++
			}
		}
	}
	if busyOf > 0 {
		o.AppSendQBusyShare = report.Float(float64(busy) / float64(busyOf))
	}

	for _, d := range res.Downloads {
		i := slices.IndexFunc(ends, func(e WriteEnd) bool { return e.ID == d.ID })
		// A hop that paces the downloads (Spec.PacedByPath) holds bytes in
		// user space, in no socket the sampler reads, and the client's
		// port names only its own side of it: the queues at the write end
		// cannot be set against the client's unread bytes.
		if i < 0 || d.FirstByteAt == 0 || len(d.Reads) == 0 || res.Spec.PacedByPath {
			continue
		}
		j := writeEndSample(s.Sockets, ends[i].UnixNano)
		if j < 0 {
			continue
		}
		ss := s.Sockets[j]
		q := report.WriteEndQueues{ID: d.ID, AtMs: float64(ss.UnixNano-from) / 1e6, EndMs: float64(ends[i].UnixNano-from) / 1e6, Hops: map[probe.Hop]int64{},
			OwnSockets: s.Spec.ProxyPort == 0, WallStepMs: float64(res.WallStep) / 1e6}
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
		// Before the client's first read it had read nothing (ReadBy's 0;
		// a download with no read at all is left out above).
		read, _ := d.ReadBy(time.Duration(ss.UnixNano - from))
		q.UnreadBytes = d.Expected - read
		q.UnreadAfterBytes = q.UnreadBytes
		if ss.DoneUnixNano > ss.UnixNano {
			q.ReadMs = float64(ss.DoneUnixNano-ss.UnixNano) / 1e6
			after, _ := d.ReadBy(time.Duration(ss.DoneUnixNano - from))
			q.UnreadAfterBytes = d.Expected - after
		}
		atEnd, _ := d.ReadBy(time.Duration(ends[i].UnixNano - from))
		q.UnreadAtEndBytes = d.Expected - atEnd
		o.AtWriteEnd = append(o.AtWriteEnd, q)
	}

	if s.Overhead.Wall > 0 {
		o.Probe = report.ProbeCost{CPUPercent: 100 * float64(s.Overhead.CPUTime) / float64(s.Overhead.Wall),
			Ticks: s.Overhead.Ticks, Missed: s.Overhead.Missed,
			SampleP50Ms: float64(s.Overhead.SampleP50) / 1e6, SampleMaxMs: float64(s.Overhead.SampleMax) / 1e6,
			SocketSource: string(s.SocketSource), SocketFallback: s.SocketFallback}
	}
	return o
}

// HeldSites are the wait sites, beside a blocking send, in which a
// worker waits to write to its client: uWSGI writes without blocking and
// waits in poll(2) for its socket to take more (reports/measurements.md,
// "Where the workers wait"). Its idle workers wait in epoll_wait, as the
// async servers' do, and Gunicorn's sync workers in pselect6. A site
// matches as a prefix: a kernel may name its wait channel with the
// compiler's suffix (poll_schedule_timeout.constprop.0).
var HeldSites = []string{"poll/poll_schedule_timeout", "ppoll/poll_schedule_timeout"}

// heldSite is whether site is one of HeldSites, suffix or not.
func heldSite(site string) bool {
	return slices.ContainsFunc(HeldSites, func(h string) bool { return site == h || strings.HasPrefix(site, h+".") })
}

// WorkerHeldShare is the least HeldShare of a worker a client held: at
// least a quarter of the load window spent waiting to write to it. A
// held worker's share was 0.42 to 0.73 in article A's stalled cells (its
// least, behind NGINX buffering off, whose buffers take the body's first
// megabytes), a free one's 0 to 0.016 behind buffering on: 1.7 times
// over the line, and 15 times under it. Under the HTTP/2 columns, 3 runs
// of each cell: held 0.69 to 0.98 (uWSGI's poll the least), free at most
// 0.07 under slow readers behind buffering on; behind buffering on under
// 128 held streams, 0.07 to 0.45, either side, and not asserted.
const WorkerHeldShare = 0.25

// Site names where a thread waited: its syscall and its kernel wait
// channel ("sendto/wait_woken", "epoll_wait/do_epoll_wait"), "running", or
// the syscall's number when the lab has no name for it.
func Site(w probe.Wait) string {
	switch {
	case w.State == probe.WaitRunning:
		return "running"
	case w.Syscall < 0:
		return "no-syscall/" + w.Wchan
	case w.SyscallName == "":
		return "syscall-" + strconv.Itoa(w.Syscall) + "/" + w.Wchan
	}
	return w.SyscallName + "/" + w.Wchan
}

// rank orders wait states so a process takes its most telling thread's.
func rank(s probe.WaitState) int {
	return map[probe.WaitState]int{probe.WaitOther: 1, probe.WaitIdle: 2, probe.WaitRunning: 3, probe.WaitSend: 4}[s]
}

// Rows flattens s for condition and run.
func Rows(condition string, run int, s probe.Series, loadStart int64) report.ProbeRows {
	var r report.ProbeRows
	ms := func(t int64) float64 { return float64(t-loadStart) / 1e6 }
	for _, x := range s.Resources {
		r.Resources = append(r.Resources, report.ResourceRow{Condition: condition, Run: run, TMs: ms(x.UnixNano),
			Container: x.Role, CPUUsageNs: int64(x.Usage.CPUUsage), NrPeriods: x.Usage.NrPeriods,
			NrThrottled: x.Usage.NrThrottled, ThrottledNs: int64(x.Usage.ThrottledTime),
			MemoryBytes: x.Usage.MemoryBytes, MemoryPeakBytes: x.Usage.MemoryPeakBytes})
	}
	for _, x := range s.Sockets {
		for _, h := range slices.Sorted(maps.Keys(x.Hops)) {
			q := x.Hops[h]
			r.Sockets = append(r.Sockets, report.SocketRow{Condition: condition, Run: run, TMs: ms(x.UnixNano), Hop: h,
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
			r.Waits = append(r.Waits, report.WaitRow{Condition: condition, Run: run, TMs: ms(x.UnixNano), Role: role[w.PID],
				PID: w.PID, TID: w.TID, Comm: w.Comm, Wchan: w.Wchan, Syscall: name, State: w.State})
		}
	}
	for _, x := range s.TempFiles {
		r.TempFiles = append(r.TempFiles, report.TempFileRow{Condition: condition, Run: run, TMs: ms(x.UnixNano),
			TotalBytes: x.TotalBytes, Files: x.Files})
	}
	return r
}

// WriteEndMaxRead is the longest socket-table read the write-end check
// takes as it comes: at 2 MiB/s the client reads 51 KiB in 25 ms, under 2 %
// of what a path holds at the write's end. WriteEndMaxWiden is the longest
// it takes at all: a longer read widens the interval the check allows past
// what it can tell (200 KiB, 7 % of 2.9 MB unread).
const (
	WriteEndMaxRead  = 25 * time.Millisecond
	WriteEndMaxWiden = 100 * time.Millisecond
)

// writeEndSample is the socket sample that checks a download whose write
// ended at end: the first read that began at or after end and took at most
// WriteEndMaxRead, else the shortest read of the 10 that follow end if it
// took at most WriteEndMaxWiden (a sampler delayed on a busy machine
// widens the interval the check allows, it never moves the instant it
// assumes); -1 if none: the download goes unchecked, and a check with no
// download checked is missing data. A sample whose sockets the sampler
// did not keep one by one (Conns nil: probe.Series.addSockets) cannot
// check anything and is passed over, never read as empty queues.
func writeEndSample(samples []probe.SocketSample, end int64) int {
	first := slices.IndexFunc(samples, func(ss probe.SocketSample) bool { return ss.UnixNano >= end })
	if first < 0 {
		return -1
	}
	read := func(k int) time.Duration { return time.Duration(samples[k].DoneUnixNano - samples[k].UnixNano) }
	best := -1
	for k := first; k < min(first+10, len(samples)); k++ {
		if samples[k].Conns == nil {
			continue
		}
		if read(k) <= WriteEndMaxRead {
			return k
		}
		if best < 0 || read(k) < read(best) {
			best = k
		}
	}
	if best < 0 || read(best) > WriteEndMaxWiden {
		return -1
	}
	return best
}

// clientStall charges each /fast request of res what the client may have
// held it (report.ClientStall): its throttled time around the request, or
// the hiccups its meter saw during it when that is more (a stall of the
// client's quota is one the meter sees too, so the two are not added).
// client is nil without the sampler's series. The p95s are the run's own
// (every request's latency, as SummarizeRun takes it).
func clientStall(client *probe.UsageSeries, res load.Result) *report.ClientStall {
	var lat, less stats.Latencies
	cs := &report.ClientStall{Metered: res.Spec.HiccupEvery > 0, Hiccups: len(res.Hiccups), HiccupsLost: res.HiccupsLost}
	for _, h := range res.Hiccups {
		cs.WorstHiccupMs = max(cs.WorstHiccupMs, stats.Ms(h.Late))
	}
	// Past the meter's record, any request may have waited on the client
	// all along.
	unrecorded := time.Duration(math.MaxInt64)
	if res.HiccupsLost > 0 {
		unrecorded = 0
		if n := len(res.Hiccups); n > 0 {
			unrecorded = res.Hiccups[n-1].End()
		}
	}
	for _, p := range res.Fast {
		lat.Add(p.Latency)
		if strings.HasPrefix(p.Error, load.NotSent) { // a stopped run's: never waited on anything
			less.Add(p.Latency)
			continue
		}
		start := p.Scheduled + p.Lag
		var charge time.Duration
		if client != nil {
			charge = client.ThrottledOver(start, start+p.Latency)
		}
		charge = max(charge, load.HiccupOver(res.Hiccups, start, start+p.Latency))
		if start+p.Latency > unrecorded {
			charge = p.Latency
		}
		less.Add(max(p.Latency-charge, 0))
		if charge > 0 {
			cs.Charged++
			cs.MostChargedMs = max(cs.MostChargedMs, stats.Ms(charge))
		}
	}
	lat.Close()
	less.Close()
	cs.P95Ms, cs.P95LessMs = stats.Ms(lat.P95), stats.Ms(less.P95)
	cs.P95ReachMs = cs.P95Ms - cs.P95LessMs
	return cs
}
