package engine

import (
	"slices"
	"time"

	"wsgilab/bench/internal/load"
	"wsgilab/bench/internal/podspec"
	"wsgilab/bench/internal/report"
	"wsgilab/bench/internal/stats"
	"wsgilab/bench/internal/verdict"
)

// ServerB is one of article B's servers.
type ServerB struct {
	// ID names the server in cell ids (verdict.Cell).
	ID string
	// Build makes its command line for a blocking call of blockMs.
	Build func(blockMs int) podspec.Server
	// Concurrent is true for servers that overlap blocked requests
	// (gevent): with blocking they finish N requests in seconds, so they
	// get the profile's larger NConcurrent and a rate that start-up does
	// not dominate.
	Concurrent bool
}

func gunicornB(class string, threads int) func(int) podspec.Server {
	return func(block int) podspec.Server { return podspec.GunicornB(class, threads, block) }
}

func uwsgiB(mode string) func(int) podspec.Server {
	return func(block int) podspec.Server {
		s, err := podspec.UWSGIB(mode, block)
		if err != nil {
			panic(err) // the modes below are known
		}
		return s
	}
}

// ServersB are article B's four configurations and two beyond it, in the
// order of verdict.AllBServers (a test keeps the two tables in step).
var ServersB = []ServerB{
	{ID: "gunicorn-sync", Build: gunicornB("sync", 0)},
	{ID: "gunicorn-gevent", Build: gunicornB("gevent", 0), Concurrent: true},
	{ID: "uwsgi-sync", Build: uwsgiB("sync")},
	{ID: "uwsgi-async-ugreen", Build: uwsgiB("async-ugreen")},
	{ID: "uwsgi-gevent", Build: uwsgiB("gevent"), Concurrent: true},
	{ID: "gunicorn-gthread-4", Build: gunicornB("gthread", 4)},
}

// BlockingMs are the article's two arms: no blocking call, and 0.1 s.
var BlockingMs = []int{0, 100}

// ProfileB is a load profile of article B.
type ProfileB struct {
	// N is -n by blocking ms; NConcurrent replaces N[100] for Concurrent
	// servers. C is always the article's 100.
	N           map[int]int
	NConcurrent int
	C           int
	// Repeats is how many pairs of runs, ours and ab against the same
	// server, each cell gets (see Order); a row is the median of its
	// generator's repeats, and the cross-check compares each pair.
	Repeats map[int]int
	// WarmupN requests from our generator go to each fresh server before
	// the first pair, and are not counted: the first requests of a fresh
	// Python server are slower, and would bias whichever generator went
	// first. A server that serves one request per worker and 0.1 s
	// (blocking, not Concurrent) gets WarmupBlockedN instead: its first
	// requests' extra milliseconds are lost in the 100 ms each takes, and
	// 500 of them cost 25 to 50 s a cell.
	WarmupN        int
	WarmupBlockedN int
	Describe       string
}

// ProfilesB: "full" is the article's -n; "ci" scales N down and takes more,
// shorter pairs, so the suite takes about 5 minutes here (the slowest
// cells run at 10 req/s: -n 100 is one wave of -c 100, served one by one
// in 10 s).
var ProfilesB = map[string]ProfileB{
	"full": {N: map[int]int{0: 10000, 100: 1000}, NConcurrent: 1000, C: 100, Repeats: map[int]int{0: 5, 100: 1}, WarmupN: 500, WarmupBlockedN: 50,
		Describe: "the article's: ab -n 10000 -c 100; -n 1000 with blocking; 5 pairs of ours and ab without blocking"},
	"ci": {N: map[int]int{0: 1000, 100: 100}, NConcurrent: 1000, C: 100, Repeats: map[int]int{0: 9, 100: 1}, WarmupN: 500, WarmupBlockedN: 50,
		Describe: "scaled for CI: -n 1000 in 9 pairs of ours and ab without blocking; -n 100 with blocking (1000 for gevent servers)"},
}

// Count is -n for srv at blocking ms block.
func (p ProfileB) Count(srv ServerB, block int) int {
	if block > 0 && srv.Concurrent {
		return p.NConcurrent
	}
	return p.N[block]
}

// Warmup is the warm-up's request count for srv at blocking ms block.
func (p ProfileB) Warmup(srv ServerB, block int) int {
	if block > 0 && !srv.Concurrent {
		return p.WarmupBlockedN
	}
	return p.WarmupN
}

// Order is the generators' order in pair k (from 1): ours first in odd
// pairs, ab first in even ones, so a drift of the server's speed over the
// pairs favours neither.
func Order(k int) []string {
	if k%2 == 1 {
		return []string{verdict.Ours, verdict.AB}
	}
	return []string{verdict.AB, verdict.Ours}
}

// GeneratorsB load every cell in turns against the same server: our
// closed loop, and Apache Bench as a cross-check. One server for both,
// because fresh servers of the same kind differ by up to 30 % in req/s
// from one pod to the next, which would drown the generators' difference.
var GeneratorsB = []string{verdict.Ours, verdict.AB}

// SamplerIntervalB samples article B's pods at 4 Hz, not article A's
// 20 Hz: B asks for throughput, and on this 2-core machine the sampler
// competes with the server and the generator. (At 20 Hz its old walk of
// /proc/net/tcp, thousands of TIME_WAIT sockets after a few seconds of
// load, cost more than a tenth of a core; sock_diag now leaves TIME_WAIT
// out in the kernel, but B's recorded figures were taken at 4 Hz.)
const SamplerIntervalB = 250 * time.Millisecond

// cpusB pins the server and the client to different cores: on this 2-core
// machine they would otherwise trade CPU, and a generator that needs more
// CPU than ab (ours does, about 2x) would lower the server's rate instead
// of only its own headroom. The sampler and the engine float.
var cpusB = struct{ server, client string }{"0", "1"}

// PodB is a cell's pod: server 1 CPU and 1 GiB, as the article's machine;
// client 1 CPU; each pinned to its own core (cpusB).
func PodB(imageRef string, srv ServerB, block int) podspec.Config {
	return podspec.New(imageRef, podspec.WithServer(srv.Build(block)),
		podspec.WithAppLimits(podspec.Limits{CPUs: 1, Memory: 1 << 30, Cpuset: cpusB.server}),
		podspec.WithClientLimits(podspec.Limits{CPUs: 1, Memory: 512 << 20, Cpuset: cpusB.client}))
}

// RunB is one generator's run against a cell's server.
type RunB struct {
	Result    load.ClosedResult
	ServerCPU float64
	Throttled float64
	Sampled   report.ProbeRows
}

var articleBFigures = func() map[string]report.ArticleBServer {
	v, err := report.ArticleB()
	if err != nil {
		panic(err) // an embedded fixture that does not decode is a broken build
	}
	return v
}()

// RowB folds a generator's repeats into its throughput.json row: medians
// of the rates, latencies and CPU; failures summed.
func RowB(srv ServerB, block int, gen string, runs []RunB) report.Throughput {
	row := report.Throughput{ID: verdict.Cell(srv.ID, block), Server: srv.ID, Generator: gen, BlockingMs: block,
		FailedBy: map[string]int{}, ReqPerSRuns: []float64{}, GeneratorBusyRuns: []float64{}}
	var rate, total, p50, p95, p99, cpu, scpu, thr []float64
	for _, r := range runs {
		row.N, row.C = r.Result.Spec.N, r.Result.Spec.C
		rate = append(rate, r.Result.ReqPerS)
		total = append(total, r.Result.Total.Seconds())
		p50 = append(p50, stats.Ms(r.Result.Latencies.P50))
		p95 = append(p95, stats.Ms(r.Result.Latencies.P95))
		p99 = append(p99, stats.Ms(r.Result.Latencies.P99))
		cpu = append(cpu, r.Result.CPU.Seconds())
		if r.Result.Total > 0 {
			row.GeneratorBusyRuns = append(row.GeneratorBusyRuns, r.Result.CPU.Seconds()/r.Result.Total.Seconds())
		}
		scpu = append(scpu, r.ServerCPU)
		thr = append(thr, r.Throttled)
		row.Failed += r.Result.Failed
		for k, v := range r.Result.FailedBy {
			row.FailedBy[k] += v
		}
	}
	row.ReqPerSRuns = append(row.ReqPerSRuns, rate...)
	row.ReqPerS, row.TotalS = stats.Median(rate), stats.Median(total)
	row.P50Ms, row.P95Ms, row.P99Ms = stats.Median(p50), stats.Median(p95), stats.Median(p99)
	row.GeneratorCPUS, row.ServerCPUPercent, row.ServerThrottledShare = stats.Median(cpu), stats.Median(scpu), stats.Median(thr)
	row.GeneratorBusy = stats.Median(slices.Clone(row.GeneratorBusyRuns))
	if ref, ok := articleBFigures[srv.ID]; ok {
		if block == 0 {
			row.ArticleReqPerS = ref.ReqPerS
		} else {
			row.ArticleReqPerS, row.ArticleNote = ref.Block100ReqPerS, ref.Block100Note
		}
	}
	return row
}

// Sampled joins the sampler's rows of runs.
func Sampled(runs []RunB) report.ProbeRows {
	var out report.ProbeRows
	for _, r := range runs {
		out.Append(r.Sampled)
	}
	return out
}
