package engine

import (
	"cmp"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"wsgilab/bench/internal/disturb"
	"wsgilab/bench/internal/load"
	"wsgilab/bench/internal/podspec"
	"wsgilab/bench/internal/probe"
	"wsgilab/bench/internal/report"
	"wsgilab/bench/internal/stats"
)

// The one summarizing path: a run's Record becomes its report rows
// (SummarizeRun), and a condition's runs become its summary
// (SummarizeCondition). The HTML report reads the summaries; it never
// recomputes them.

// RunRows are everything SummarizeRun derives from one Record.
type RunRows struct {
	Run       report.Run
	Requests  []report.Request
	Downloads []report.Download
	Sampler   report.ProbeRows
}

// SummarizeRun turns a run's raw record into its report rows. The run is
// sound when the lab measured it whole: every complete download has the
// app's write record, and the /proc sampler took samples in the window,
// saw an app worker and reported no error. It is valid when it is sound
// and the server failed nothing: every /fast request got a 200 with the
// full body and every download completed. Invalid names each reason.
func SummarizeRun(c Condition, rec Record) RunRows {
	res := rec.Load
	run := report.Run{Condition: rec.Condition, Run: rec.Run, StartedAt: rec.Started.UTC(),
		RequestsTotal: len(res.Fast), DownloadsTotal: len(res.Downloads),
		WindowS: res.Elapsed.Seconds(), WallStepMs: stats.Ms(res.WallStep), Server: rec.Pod.Server.ID, Sysctls: rec.Client.Sysctls}
	if l := rec.Client.Limits; l.CPUQuotaMicros > 0 && l.CPUPeriodMicros > 0 {
		run.ClientCPUs = float64(l.CPUQuotaMicros) / float64(l.CPUPeriodMicros)
	}
	// failures are the server's (a failed request, a slow client not
	// served whole); problems the lab's own (its sampler, its records).
	var failures, problems []string
	out := RunRows{}

	var lag stats.Latencies
	var late load.Latest // the two latest starts
	for _, p := range res.Fast {
		late.Add(p.Lag)
		lag.Add(p.Lag)
	}
	lat := fastSeries(rec, res.Fast, "", &out, &run.RequestsOK, &failures)
	lag.Close()
	run.P50Ms, run.P95Ms, run.MaxMs = stats.Ms(lat.P50), stats.Ms(lat.P95), stats.Ms(lat.Max)
	run.LagMaxMs, run.LagP99Ms, run.LagSecondMs = stats.Ms(lag.Max), stats.Ms(lag.P99), stats.Ms(late.Second)
	if run.RequestsTotal == 0 {
		problems = append(problems, "no /fast request was made")
	}
	if len(res.FastH2) > 0 {
		run.RequestsTotalH2 = len(res.FastH2)
		h2 := fastSeries(rec, res.FastH2, report.ProtoH2, &out, &run.RequestsOKH2, &failures)
		run.P50MsH2, run.P95MsH2 = stats.Ms(h2.P50), stats.Ms(h2.P95)
	}
	if res.Stopped != "" {
		problems = append(problems, "the load stopped early: "+res.Stopped)
	}
	if step := res.WallStep; step.Abs() > disturb.DefaultWallStep {
		problems = append(problems, fmt.Sprintf("the wall clock moved %v against the monotonic clock during the load "+
			"(more than %v): the app's, the sampler's and the client's records, lined up on it, are not", step, disturb.DefaultWallStep))
	}

	var writes, completions []float64
	// The first few slow clients of a kind of failure are named, the rest
	// counted: a step of 10,000 held connections can fail them all.
	unserved, unrecorded := 0, 0
	for _, d := range res.Downloads {
		w, found := rec.Writes[d.ID]
		row := report.Download{Condition: rec.Condition, Run: rec.Run, ID: d.ID, Kind: d.Kind, Status: d.Status,
			Bytes: d.Bytes, Expected: d.Expected, Complete: d.Complete(), Outcome: d.Outcome(), Framing: d.Framing,
			ReceiveBufferGranted: d.ReceiveBufferGranted, StartMs: stats.Ms(d.Start), ConnectMs: stats.Ms(d.Connect),
			FirstByteMs: stats.Ms(d.FirstByte), CompletionS: d.Completion.Seconds(),
			WriteS: w.Write.Seconds(), WriteComplete: w.Complete, WorkerPID: w.PID, Error: d.Error,
			Messages: d.Messages, Lost: d.Lost, Reordered: d.Reordered}
		out.Downloads = append(out.Downloads, row)
		if run.SlowOutcomes == nil {
			run.SlowOutcomes = map[string]int{}
		}
		run.SlowOutcomes[row.Outcome]++
		run.ConnectMsMax = max(run.ConnectMsMax, row.ConnectMs)
		// A held connection has no body, so the app keeps no record of it.
		// A team's app (Target) keeps none at all, and an app the OOM
		// killer hit lost its records with its container: the kill, a
		// failure of the server, is the run's outcome (a download that
		// completed before it stands on the client's record alone).
		recorded := !load.Holds(d.Kind) && c.Target == nil && !slices.Contains(rec.OOMKilled, podspec.RoleApp)
		switch {
		case !d.Served():
			if unserved++; unserved <= namedClients {
				failures = append(failures, fmt.Sprintf("slow client %s %s: status %d, %d of %d bytes, %s",
					d.ID, row.Outcome, d.Status, d.Bytes, d.Expected, d.Error))
			}
		case recorded && (!found || !w.Complete):
			if unrecorded++; unrecorded <= namedClients {
				problems = append(problems, fmt.Sprintf("slow client %s has no complete record in the app", d.ID))
			}
		default:
			run.DownloadsComplete++
		}
		if recorded {
			writes = append(writes, row.WriteS)
		}
		completions = append(completions, row.CompletionS)
	}
	if more := unserved - namedClients; more > 0 {
		failures = append(failures, fmt.Sprintf("and %d more slow clients not served", more))
	}
	if more := unrecorded - namedClients; more > 0 {
		problems = append(problems, fmt.Sprintf("and %d more slow clients without a complete record in the app", more))
	}
	if len(res.Downloads) != c.Records() {
		problems = append(problems, fmt.Sprintf("%d slow clients' records came, the condition asks for %d", len(res.Downloads), c.Records()))
	}
	run.WorkerTimeouts = strings.Count(rec.AppLog, workerTimeoutLine)
	if len(rec.OOMKilled) > 0 {
		run.OOMKilled = slices.Clone(rec.OOMKilled)
		failures = append(failures, "the OOM killer hit the "+strings.Join(rec.OOMKilled, " and the ")+" at its memory limit")
	}
	if rec.AppLogError != "" {
		problems = append(problems, "the app's log could not be read: "+rec.AppLogError)
	}
	if res.Stream != nil && res.Spec.Stream != nil {
		run.Stream = streamOf(*res.Stream, res.Spec.Stream.Events)
		if st := run.Stream; st.Error != "" || st.Events != st.Expected || st.Status != http.StatusOK {
			failures = append(failures, fmt.Sprintf("event stream: status %d, %d of %d events, %s", st.Status, st.Events, st.Expected, st.Error))
		}
	} else if c.Stream != nil {
		problems = append(problems, "the condition reads an event stream, the run has none")
	}
	run.WriteS, run.CompletionS = stats.Median(writes), stats.Median(completions)

	if len(res.Baseline) > 0 {
		var b stats.Latencies
		for _, p := range res.Baseline {
			b.Add(p.Latency)
		}
		b.Close()
		run.BaselineP50Ms, run.BaselineP95Ms = stats.Ms(b.P50), stats.Ms(b.P95)
	}
	if run.RequestsOKH2 < run.RequestsTotalH2 {
		failures = append([]string{fmt.Sprintf("%d of %d /fast requests over HTTP/2 failed", run.RequestsTotalH2-run.RequestsOKH2, run.RequestsTotalH2)}, failures...)
	}
	if run.RequestsOK < run.RequestsTotal {
		failures = append([]string{fmt.Sprintf("%d of %d /fast requests failed", run.RequestsTotal-run.RequestsOK, run.RequestsTotal)}, failures...)
	}

	if rec.Sampler == nil {
		problems = append(problems, "no /proc sampler series")
	} else {
		var ends []WriteEnd
		for id, w := range rec.Writes {
			ends = append(ends, WriteEnd{ID: id, UnixNano: w.StartNs + int64(w.Write)})
		}
		o := Observe(*rec.Sampler, res, ends)
		run.Observed = &o
		problems = append(problems, samplerProblems(o, rec.OOMKilled)...)
		out.Sampler = Rows(rec.Condition, rec.Run, *rec.Sampler, res.StartUnixNano)
	}
	if h := rec.Host; h != nil {
		run.Host = disturb.Host(h.Points, h.Interval, disturb.DefaultOutsideWindow)
	}
	run.Cut = cutOf(c, rec, run.Observed)
	problems = append(problems, cutProblems(run.Cut, run.Observed)...)
	run.Sound = len(problems) == 0
	run.Valid = run.Sound && len(failures) == 0
	run.Invalid = strings.Join(append(failures, problems...), "; ")
	out.Run = run
	return out
}

// fastSeries folds one /fast series of rec's run (proto "" for HTTP/1.1's,
// report.ProtoH2 for HTTP/2's): its closed latencies, its requests served
// counted in ok, its rows appended to out, and its first failures named
// in failures (3 in all, over every series).
func fastSeries(rec Record, reqs []load.FastRequest, proto string, out *RunRows, ok *int, failures *[]string) stats.Latencies {
	var lat stats.Latencies
	what := "request"
	if proto == report.ProtoH2 {
		what = "HTTP/2 request"
	}
	for _, p := range reqs {
		lat.Add(p.Latency)
		if p.OK(rec.Load.Spec) {
			*ok++
		} else if len(*failures) < 3 {
			*failures = append(*failures, fmt.Sprintf("%s %d: status %d, %d bytes, %s", what, p.Seq, p.Status, p.Bytes, p.Error))
		}
		out.Requests = append(out.Requests, report.Request{Condition: rec.Condition, Run: rec.Run, Seq: p.Seq,
			ScheduledMs: stats.Ms(p.Scheduled), LagMs: stats.Ms(p.Lag), LatencyMs: stats.Ms(p.Latency),
			Status: p.Status, Bytes: p.Bytes, Error: p.Error, Proto: proto})
	}
	lat.Close()
	return lat
}

// samplerProblems are why a run's sampler data cannot be trusted.
//
// A role the OOM killer hit (killed) may have lost its container with its
// only process (Caddy, Uvicorn in one process): the sampler's errors
// about that role's cgroup and processes are then the outcome measured,
// not a fault of the sampler.
func samplerProblems(o report.Observed, killed []string) []string {
	var p []string
	errs := slices.DeleteFunc(slices.Clone(o.Errors), func(e string) bool {
		return slices.ContainsFunc(killed, func(role string) bool { return strings.HasPrefix(e, role+" ") })
	})
	if len(errs) > 0 {
		p = append(p, fmt.Sprintf("the sampler reported %d error(s), first: %s", len(errs), errs[0]))
	}
	if o.Resources["app"].Samples == 0 {
		p = append(p, "the sampler took no sample of the app in the load window")
	}
	if !slices.ContainsFunc(o.Workers, func(w report.WorkerWaits) bool { return w.Role == "app" && w.Samples > 0 }) {
		p = append(p, "the sampler saw no app worker")
	}
	if o.Proxied {
		if !slices.ContainsFunc(o.Workers, func(w report.WorkerWaits) bool { return w.Role == "proxy" && w.Samples > 0 }) {
			p = append(p, "the sampler saw no proxy worker")
		}
		if o.Spills && o.TempfileSamples == 0 {
			p = append(p, "the sampler took no sample of the proxy's temp files")
		}
	}
	return p
}

// SummarizeCondition folds one condition's runs, in the article's way:
// per run the p95 by nearest rank; per condition the median of the valid
// runs' values. ref is the article's figure, zero where it gave none.
func SummarizeCondition(c Condition, runs []report.Run, ref report.ArticleValue) report.Condition {
	s := report.Condition{ID: c.ID, Server: c.Server.ID, Path: c.Path.ID, Downloads: c.Downloads, SlowKind: c.SlowKind,
		BodyBytes: c.BodyBytes, ReadRate: c.ReadRate, Pacer: c.Pacer, Fault: c.Fault, TCPProfile: c.TCP.ID,
		RunsTotal: len(runs), ArticleP95Ms: ref.P95Ms, ArticleP95MsRange: ref.P95MsRange,
		ArticleWriteS: ref.WriteS, ArticleCompletionS: ref.CompletionS, P95MsRuns: []float64{},
		SendShares: []report.RunSendShares{}, ThrottledShare: map[string]float64{}}
	if c.Records() != c.Downloads {
		s.Records = c.Records()
	}
	var p50, maxs, writes, completions, soundP95, soundSpills []float64
	spillsSeen := true
	var valid []report.Run
	var streams []*report.Stream
	var cuts []*report.Cut
	for _, r := range runs {
		// An unsound run says nothing about the server: its counts stay out.
		if !r.Sound {
			continue
		}
		s.RunsSound++
		s.ClientCPUs = max(s.ClientCPUs, r.ClientCPUs)
		s.RequestsOK += r.RequestsOK
		s.RequestsTotal += r.RequestsTotal
		s.RequestsOKH2 += r.RequestsOKH2
		s.RequestsTotalH2 += r.RequestsTotalH2
		s.DownloadsComplete += r.DownloadsComplete
		s.DownloadsTotal += r.DownloadsTotal
		s.WorkerTimeouts += r.WorkerTimeouts
		if len(r.OOMKilled) > 0 {
			s.RunsOOM++
			for _, role := range r.OOMKilled {
				if !slices.Contains(s.OOMKilled, role) {
					s.OOMKilled = append(s.OOMKilled, role)
				}
			}
		}
		if r.WorkerTimeouts > 0 {
			s.RunsWorkerTimeout++
		}
		if !slices.Contains(r.OOMKilled, podspec.RoleProxy) {
			if o := r.Observed; o != nil && o.TempfileSamples > 0 {
				soundSpills = append(soundSpills, o.TempfilePeakMiB)
			} else {
				spillsSeen = false
			}
		}
		streams = append(streams, r.Stream)
		cuts = append(cuts, r.Cut)
		soundP95 = append(soundP95, r.P95Ms)
		s.ConnectMsMax = max(s.ConnectMsMax, r.ConnectMsMax)
		for o, n := range r.SlowOutcomes {
			if s.SlowOutcomes == nil {
				s.SlowOutcomes = map[string]int{}
			}
			s.SlowOutcomes[o] += n
		}
		cut := r.SlowOutcomes[load.OutcomeTruncated] + r.SlowOutcomes[load.OutcomeReset]
		if s.RunsSound == 1 || cut < s.CutMin {
			s.CutMin = cut
		}
		s.CutMax = max(s.CutMax, cut)
		if !r.Valid {
			continue
		}
		valid = append(valid, r)
		s.RunsValid++
		s.P95MsRuns = append(s.P95MsRuns, r.P95Ms)
		if r.RequestsTotalH2 > 0 {
			s.P95MsH2Runs = append(s.P95MsH2Runs, r.P95MsH2)
		}
		p50 = append(p50, r.P50Ms)
		maxs = append(maxs, r.MaxMs)
		s.LagMaxMs = max(s.LagMaxMs, r.LagMaxMs)
		if r.DownloadsTotal > 0 {
			writes = append(writes, r.WriteS)
			completions = append(completions, r.CompletionS)
		}
	}
	s.Cut = foldCuts(cuts)
	s.P95Ms = stats.Median(s.P95MsRuns)
	s.P95MsSound = stats.Median(soundP95)
	s.P95MsMin, s.P95MsMax = stats.Range(s.P95MsRuns)
	if len(s.P95MsH2Runs) > 0 && len(s.P95MsH2Runs) == s.RunsValid {
		s.P95MsH2 = report.Float(stats.Median(s.P95MsH2Runs))
	}
	s.P50Ms = stats.Median(p50)
	s.MaxMs = stats.Median(maxs)
	s.WriteS = stats.Median(writes)
	s.Stream = foldStreams(streams)
	s.CompletionS = stats.Median(completions)
	if spillsSeen && len(soundSpills) > 0 {
		s.TempfilePeakMiBSoundLeast = report.Float(slices.Min(soundSpills))
	}
	summarizeObserved(&s, valid)
	return s
}

// summarizeObserved sets the sampler's figures from the valid runs. A
// figure is set only when every valid run observed it, so a verdict never
// reads a median over a partial or empty set.
func summarizeObserved(s *report.Condition, valid []report.Run) {
	var appMem, appGrowth, clientCPU, appFDs, proxyFDs []float64
	var peaks, cpu, sendMin, sendMax, proxyMax, proxyMem, busy, mismatch, path, unread, unreadMax, accept, held, seen, free []float64
	throttled := map[string][]float64{}
	hops := map[probe.Hop][]float64{}
	sites, siteSamples := map[string]float64{}, 0.0
	for _, r := range slices.SortedFunc(slices.Values(valid), func(a, b report.Run) int { return cmp.Compare(a.Run, b.Run) }) {
		o := r.Observed
		if o == nil {
			return
		}
		if o.TempfileSamples > 0 {
			peaks = append(peaks, o.TempfilePeakMiB)
		}
		accept = append(accept, float64(o.AcceptQueuePeak))
		held, seen = append(held, float64(o.AppWorkersHeld)), append(seen, float64(o.AppWorkers))
		free = append(free, float64(o.AppWorkers-o.AppWorkersHeld))
		if app, ok := o.Resources["app"]; ok && app.Samples > 0 {
			cpu = append(cpu, app.CPUPercent)
		}
		for role, res := range o.Resources {
			throttled[role] = append(throttled[role], res.ThrottledShare)
		}
		if px, ok := o.Resources["proxy"]; ok && px.Samples > 0 {
			proxyMem = append(proxyMem, px.MaxMemoryMiB)
			if px.MaxFDs > 0 {
				proxyFDs = append(proxyFDs, float64(px.MaxFDs))
			}
		}
		if app, ok := o.Resources["app"]; ok && app.Samples > 0 {
			appMem = append(appMem, app.MaxMemoryMiB)
			appGrowth = append(appGrowth, app.MemoryGrowthMiB)
			if app.MaxFDs > 0 {
				appFDs = append(appFDs, float64(app.MaxFDs))
			}
		}
		if cl, ok := o.Resources["client"]; ok && cl.Samples > 0 {
			clientCPU = append(clientCPU, cl.CPUPercent)
		}
		if r.DownloadsTotal > 0 {
			path = append(path, float64(o.PathPeakBytes))
			for h, p := range o.Hops {
				if h != probe.HopListen {
					hops[h] = append(hops[h], float64(p.PeakSendQBytes+p.PeakRecvQBytes))
				}
			}
		}
		shares := report.RunSendShares{Run: r.Run, App: []float64{}}
		for _, w := range o.Workers {
			if w.Samples == 0 {
				continue
			}
			switch w.Role {
			case "app":
				shares.App = append(shares.App, w.SendShare)
				for site, share := range w.Sites {
					sites[site] += share * float64(w.Samples)
				}
				siteSamples += float64(w.Samples)
			case "proxy":
				shares.Proxy = append(shares.Proxy, w.SendShare)
			}
		}
		slices.SortFunc(shares.App, func(a, b float64) int { return cmp.Compare(b, a) })
		slices.SortFunc(shares.Proxy, func(a, b float64) int { return cmp.Compare(b, a) })
		s.SendShares = append(s.SendShares, shares)
		if len(shares.App) > 0 {
			sendMax, sendMin = append(sendMax, shares.App[0]), append(sendMin, shares.App[len(shares.App)-1])
		}
		if len(shares.Proxy) > 0 {
			proxyMax = append(proxyMax, shares.Proxy[0])
		}
		if r.DownloadsTotal > 0 && o.AppSendQBusyShare != nil {
			busy = append(busy, *o.AppSendQBusyShare)
		}
		worst, checked := 0.0, 0
		for _, q := range o.AtWriteEnd {
			if q.OwnSockets && q.UnreadBytes > 0 {
				m := q.Mismatch()
				if s.WriteEndWorst == nil || m > s.WriteEndWorst.Mismatch() {
					s.WriteEndWorst = &q
				}
				worst = max(worst, m)
				checked++
			}
		}
		if checked > 0 {
			mismatch = append(mismatch, worst)
		}
		if r.DownloadsTotal > 0 && len(o.AtWriteEnd) == r.DownloadsTotal {
			var sum, most float64
			for _, q := range o.AtWriteEnd {
				sum += float64(q.UnreadAtEndBytes)
				most = max(most, float64(q.UnreadAtEndBytes))
			}
			unread, unreadMax = append(unread, sum/float64(len(o.AtWriteEnd))), append(unreadMax, most)
		}
	}
	n := len(valid)
	all := func(xs []float64, f func([]float64) float64) *float64 {
		if n == 0 || len(xs) < n {
			return nil
		}
		return report.Float(f(xs))
	}
	maxOf := func(xs []float64) float64 { _, hi := stats.Range(xs); return hi }
	s.TempfilePeakMiB, s.TempfilePeakMiBMax = all(peaks, stats.Median[float64]), all(peaks, maxOf)
	s.AppCPUPercent = all(cpu, stats.Median[float64])
	s.AppWorkerSendShareMin, s.AppWorkerSendShareMax = all(sendMin, stats.Median[float64]), all(sendMax, stats.Median[float64])
	s.ProxyWorkerSendShareMax = all(proxyMax, stats.Median[float64])
	s.ProxyMemoryPeakMiB = all(proxyMem, stats.Median[float64])
	s.AppMemoryPeakMiB = all(appMem, stats.Median[float64])
	s.AppMemoryGrowthMiB = all(appGrowth, stats.Median[float64])
	s.AppFDsPeak, s.ProxyFDsPeak = all(appFDs, stats.Median[float64]), all(proxyFDs, stats.Median[float64])
	s.ClientCPUPercent = all(clientCPU, stats.Median[float64])
	s.AppSendQBusyShare = all(busy, stats.Median[float64])
	s.WriteEndMismatchMax = all(mismatch, maxOf)
	if s.WriteEndMismatchMax == nil {
		s.WriteEndWorst = nil // as its figure: every valid run's, or none
	}
	for role, v := range throttled {
		s.ThrottledShare[role] = stats.Median(v)
	}
	s.PathPeakBytes = all(path, stats.Median[float64])
	s.AcceptQueuePeak = all(accept, stats.Median[float64])
	s.AppWorkersHeld, s.AppWorkers = all(held, stats.Median[float64]), all(seen, stats.Median[float64])
	s.AppWorkersFree = all(free, stats.Median[float64])
	s.WriteEndUnreadBytes, s.WriteEndUnreadMaxBytes = all(unread, stats.Median[float64]), all(unreadMax, stats.Median[float64])
	if n > 0 && siteSamples > 0 {
		s.AppWaitSites = []report.SiteShare{}
		for _, site := range slices.Sorted(maps.Keys(sites)) {
			s.AppWaitSites = append(s.AppWaitSites, report.SiteShare{Site: site, Share: sites[site] / siteSamples})
		}
		slices.SortStableFunc(s.AppWaitSites, func(a, b report.SiteShare) int { return cmp.Compare(b.Share, a.Share) })
	}
	for h, v := range hops {
		if len(v) == n {
			if s.HopPeakBytes == nil {
				s.HopPeakBytes = map[probe.Hop]float64{}
			}
			s.HopPeakBytes[h] = stats.Median(v)
		}
	}
}

// namedClients is how many slow clients of one kind of failure a run's
// summary names; the rest it counts.
const namedClients = 5
