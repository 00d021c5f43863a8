package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"wsgilab/bench/internal/image"
	"wsgilab/bench/internal/load"
	"wsgilab/bench/internal/probe"
	"wsgilab/bench/internal/report"
	"wsgilab/bench/internal/stack"
	"wsgilab/bench/internal/stats"
)

// serverB is one of article B's servers; build makes its command line
// for a blocking call of blockMs.
type serverB struct {
	ID    string
	build func(blockMs int) (stack.Server, error)
	// Article is true for the four configurations the article measured.
	Article bool
}

func gunicornB(class string, threads int) func(int) (stack.Server, error) {
	return func(block int) (stack.Server, error) { return stack.GunicornB(class, threads, block), nil }
}

func uwsgiB(mode string) func(int) (stack.Server, error) {
	return func(block int) (stack.Server, error) { return stack.UWSGIB(mode, block) }
}

// serversB are article B's four configurations and two beyond it.
var serversB = []serverB{
	{"gunicorn-sync", gunicornB("sync", 0), true},
	{"gunicorn-gevent", gunicornB("gevent", 0), true},
	{"uwsgi-sync", uwsgiB("sync"), true},
	{"uwsgi-async-ugreen", uwsgiB("async-ugreen"), true},
	{"uwsgi-gevent", uwsgiB("gevent"), false},
	{"gunicorn-gthread-4", gunicornB("gthread", 4), false},
}

// BlockingMs are the article's two arms: no blocking call, and 0.1 s.
var blockingMs = []int{0, 100}

// profileB is a load profile: N per arm; C is always the article's 100.
type profileB struct {
	N map[int]int // by blocking ms
	C int
	// Repeats alternates the generators this many times per cell (ours,
	// ab, ours, ab, ...); a row is the median of its generator's repeats.
	Repeats  map[int]int
	Describe string
}

// profilesB: "full" is the article's; "ci" scales N down so the suite
// takes about 4 minutes here (the slowest cells run at 10 req/s).
var profilesB = map[string]profileB{
	"full": {N: map[int]int{0: 10000, 100: 1000}, C: 100, Repeats: map[int]int{0: 3, 100: 1},
		Describe: "the article's: ab -n 10000 -c 100; -n 1000 with blocking; 3 alternating repeats without blocking"},
	"ci": {N: map[int]int{0: 3000, 100: 200}, C: 100, Repeats: map[int]int{0: 3, 100: 1},
		Describe: "scaled for CI: -n 3000; -n 200 with blocking; 3 alternating repeats without blocking"},
}

// DefaultProfile is the article B profile unless LAB_PROFILE says otherwise.
const DefaultProfile = "ci"

func labProfile(t testing.TB) (string, profileB) {
	t.Helper()
	name := os.Getenv("LAB_PROFILE")
	if name == "" {
		name = DefaultProfile
	}
	p, ok := profilesB[name]
	if !ok {
		t.Fatalf("LAB_PROFILE=%q: want ci (make test) or full (make repro)", name)
	}
	return name, p
}

// generatorsB load every cell twice, one after the other against the same
// server: our closed loop, then Apache Bench as a cross-check. One server
// for both, because fresh servers of the same kind differ by up to 15 %
// in req/s from one pod to the next here, which would drown the
// generators' difference.
var generatorsB = []string{"ours", "ab"}

// TestArticleB runs article B: every server with and without the 0.1 s
// blocking call, loaded by our generator and by ab, then checks the
// claims.
//
//	go test ./bench -run 'TestArticleB/gunicorn-gevent-block100' -v
func TestArticleB(t *testing.T) {
	name, prof := labProfile(t)
	t.Logf("article B profile %s: %s", name, prof.Describe)
	progressB.start()
	for _, srv := range serversB {
		for _, block := range blockingMs {
			id := fmt.Sprintf("%s-block%d", srv.ID, block)
			t.Run(id, func(t *testing.T) {
				pod := startB(t, srv, block)
				runs := map[string][]runB{}
				for k := 1; k <= prof.Repeats[block]; k++ {
					for _, gen := range generatorsB {
						t.Run(fmt.Sprintf("%s-%d", gen, k), func(t *testing.T) {
							runs[gen] = append(runs[gen], measureB(t, pod, id, block, gen, k, prof))
						})
					}
				}
				for _, gen := range generatorsB {
					row := rowB(srv, id, block, gen, runs[gen])
					require.NoError(t, seriesOfB.add(row))
					verdict := "no failed request"
					if row.Failed > 0 {
						verdict = fmt.Sprintf("FAILED %d %v", row.Failed, row.FailedBy)
					}
					progressB.runDone(t, id+"/"+gen, 1, 1, len(serversB)*len(blockingMs)*len(generatorsB),
						fmt.Sprintf("%.1f req/s (runs %.0f; article %.1f %s), p50 %.0f ms, p99 %.0f ms, generator CPU %.2f s, server CPU %.0f%%, %s",
							row.ReqPerS, row.ReqPerSRuns, row.ArticleReqPerS, row.ArticleNote,
							row.P50Ms, row.P99Ms, row.GeneratorCPUS, row.ServerCPUPercent, verdict))
					assert.Zerof(t, row.Failed, "%s with %s: %d failed requests %v", id, gen, row.Failed, row.FailedBy)
				}
				require.NoError(t, probed.write())
			})
		}
	}
	t.Run("claims", func(t *testing.T) {
		assertClaims(t, seriesOfB.evaluate(claimsB))
		require.NoError(t, writeClaims())
	})
}

// probeIntervalB samples article B's pods at 4 Hz, not article A's 20 Hz:
// B asks for throughput, and at 20 Hz the probe's walk of /proc/net/tcp
// (thousands of TIME_WAIT sockets after a few seconds of load) costs more
// than a tenth of a core, which on this 2-core machine would compete with
// the server and the generator.
const probeIntervalB = 250 * time.Millisecond

// rawB is an article B cell's raw record, raw/<id>-<generator>.json.
type rawB struct {
	ID        string            `json:"id"`
	Generator string            `json:"generator"`
	Pod       stack.Config      `json:"pod"`
	Result    load.ClosedResult `json:"result"`
	Probe     *probe.Series     `json:"probe,omitempty"`
}

// cpusB pins the server and the client to different cores: on this 2-core
// machine they would otherwise trade CPU, and a generator that needs more
// CPU than ab (ours does, about 2x) would lower the server's rate instead
// of only its own headroom. The probe and the engine float.
var cpusB = struct{ server, client string }{"0", "1"}

// startB starts a fresh pod for one cell: server 1 CPU and 1 GiB, as the
// article's machine; client 1 CPU.
func startB(t testing.TB, srv serverB, block int) *stack.Pod {
	t.Helper()
	server, err := srv.build(block)
	require.NoError(t, err)
	return stack.Start(t, lab.pool, stack.New(lab.image, stack.WithServer(server),
		stack.WithAppLimits(stack.Limits{CPUs: 1, Memory: 1 << 30, Cpuset: cpusB.server}),
		stack.WithClientLimits(stack.Limits{CPUs: 1, Memory: 512 << 20, Cpuset: cpusB.client})))
}

// runB is one generator's run against a cell's server.
type runB struct {
	res       load.ClosedResult
	serverCPU float64
	throttled float64
}

// measureB loads the pod's server once with one generator.
func measureB(t testing.TB, pod *stack.Pod, id string, block int, gen string, k int, prof profileB) runB {
	t.Helper()
	spec := load.ClosedSpec{URL: pod.URL("/account/ulogin/3/?wlanuserip=10.1.2.3&wlanacname=lab-ac&ssid=lab&wlanparameter=00%3A11%3A22%3A33%3A44%3A55"),
		N: prof.N[block], C: prof.C, Timeout: load.DefaultClosedTimeout}
	specJSON, err := json.Marshal(spec)
	require.NoError(t, err)
	command := "closed"
	if gen == "ab" {
		command = "ab"
	}
	raw := rawB{ID: id, Generator: gen, Pod: pod.Config}
	sampling, err := pod.StartProbe(probeIntervalB)
	require.NoError(t, err)
	start := time.Now()
	require.NoError(t, pod.ExecJSON(pod.Client, &raw.Result, image.AgentPath, command, string(specJSON)))
	elapsed := time.Since(start)
	series, err := sampling.Stop()
	require.NoError(t, err, "probe")
	raw.Probe = &series
	require.NoError(t, report.WriteFile(lab.reportDir+"/raw", fmt.Sprintf("%s-%s-%d.json", id, gen, k), report.JSON(raw)))
	probed.add(report.Rows(fmt.Sprintf("%s/%s-%d", id, gen, k), k, series, start.UnixNano()))

	// The probe's window is the generator's exec.
	obs := report.Observe(series, load.Result{StartUnixNano: start.UnixNano(), Elapsed: elapsed}, nil)
	return runB{res: raw.Result, serverCPU: obs.Resources["app"].CPUPercent, throttled: obs.Resources["app"].ThrottledShare}
}

// rowB folds a generator's repeats into its throughput.json row: medians
// of the rates, latencies and CPU; failures summed.
func rowB(srv serverB, id string, block int, gen string, runs []runB) report.Throughput {
	row := report.Throughput{ID: id, Server: srv.ID, Generator: gen, BlockingMs: block, FailedBy: map[string]int{}}
	var rate, total, p50, p95, p99, cpu, scpu, thr []float64
	for _, r := range runs {
		row.N, row.C = r.res.Spec.N, r.res.Spec.C
		rate = append(rate, r.res.ReqPerS)
		total = append(total, r.res.Total.Seconds())
		p50 = append(p50, stats.Ms(r.res.Latencies.P50))
		p95 = append(p95, stats.Ms(r.res.Latencies.P95))
		p99 = append(p99, stats.Ms(r.res.Latencies.P99))
		cpu = append(cpu, r.res.CPU.Seconds())
		scpu = append(scpu, r.serverCPU)
		thr = append(thr, r.throttled)
		row.Failed += r.res.Failed
		for k, v := range r.res.FailedBy {
			row.FailedBy[k] += v
		}
	}
	row.ReqPerSRuns = rate
	row.ReqPerS, row.TotalS = stats.Median(rate), stats.Median(total)
	row.P50Ms, row.P95Ms, row.P99Ms = stats.Median(p50), stats.Median(p95), stats.Median(p99)
	row.GeneratorCPUS, row.ServerCPUPercent, row.ServerThrottledShare = stats.Median(cpu), stats.Median(scpu), stats.Median(thr)
	if ref, ok := articleBRef[srv.ID]; ok {
		if block == 0 {
			row.ArticleReqPerS = ref.ReqPerS
		} else {
			row.ArticleReqPerS, row.ArticleNote = ref.Block100ReqPerS, ref.Block100Note
		}
	}
	return row
}

var articleBRef = must(report.ArticleB())

// seriesB accumulates article B's rows and rewrites its reports after each.
type seriesB struct {
	mu     sync.Mutex
	rows   []report.Throughput
	claims []report.Claim
}

var seriesOfB = &seriesB{claims: []report.Claim{}}

func (s *seriesB) add(row report.Throughput) error {
	s.mu.Lock()
	s.rows = append(s.rows, row)
	rows := slices.Clone(s.rows)
	s.mu.Unlock()
	return errors.Join(
		report.WriteFile(lab.reportDir, "throughput.json", report.JSON(rows)),
		report.WriteFile(lab.reportDir, "article_b.bench.txt", report.BenchfmtB(lab.env, rows)),
	)
}

// rate is the req/s of a server, blocking arm and generator.
func (s *seriesB) rate(server string, block int, gen string) (float64, bool) {
	for _, r := range s.rows {
		if r.Server == server && r.BlockingMs == block && r.Generator == gen {
			return r.ReqPerS, true
		}
	}
	return 0, false
}

// claimB checks one of article B's claims on the measured rows.
type claimB struct {
	ID, Text, Unit string
	Check          func(s *seriesB) (measured float64, threshold string, holds bool, missing string)
}

func rateAtMost(server string, block int, limit float64) func(*seriesB) (float64, string, bool, string) {
	return func(s *seriesB) (float64, string, bool, string) {
		r, ok := s.rate(server, block, "ours")
		if !ok {
			return 0, "", false, server
		}
		return r, fmt.Sprintf("<= %g", limit), r <= limit, ""
	}
}

// ratio checks rate(a)/rate(b) against limit, at least (atLeast) or at most.
func ratio(a, b string, block int, limit float64, atLeast bool) func(*seriesB) (float64, string, bool, string) {
	return func(s *seriesB) (float64, string, bool, string) {
		ra, okA := s.rate(a, block, "ours")
		rb, okB := s.rate(b, block, "ours")
		if !okA || !okB || rb == 0 {
			return 0, "", false, a + ", " + b
		}
		m := ra / rb
		if atLeast {
			return m, fmt.Sprintf(">= %g", limit), m >= limit, ""
		}
		return m, fmt.Sprintf("<= %g", limit), m <= limit, ""
	}
}

// claimsB are article B's claims, asserted in TestArticleB/claims/<id>.
// Margins: reports/measurements.md.
var claimsB = []claimB{
	{ID: "no-blocking-all-alike", Text: "without blocking, the four article configurations are within 2x of each other (max/min req/s)", Unit: "x",
		Check: func(s *seriesB) (float64, string, bool, string) {
			var rates []float64
			for _, srv := range serversB {
				if !srv.Article {
					continue
				}
				r, ok := s.rate(srv.ID, 0, "ours")
				if !ok {
					return 0, "", false, srv.ID
				}
				rates = append(rates, r)
			}
			m := slices.Max(rates) / slices.Min(rates)
			return m, "<= 2", m <= 2, ""
		}},
	{ID: "gunicorn-sync-collapses", Text: "with 0.1 s blocking, one Gunicorn sync worker serves at most about 1/0.1 s", Unit: "req/s",
		Check: rateAtMost("gunicorn-sync", 100, 10.5)},
	{ID: "uwsgi-sync-collapses", Text: "with 0.1 s blocking, one uWSGI sync process serves at most about 1/0.1 s", Unit: "req/s",
		Check: rateAtMost("uwsgi-sync", 100, 10.5)},
	{ID: "gevent-keeps-rate", Text: "with 0.1 s blocking, Gunicorn gevent serves at least 10x Gunicorn sync", Unit: "x",
		Check: ratio("gunicorn-gevent", "gunicorn-sync", 100, 10, true)},
	{ID: "ugreen-does-not-help", Text: "with 0.1 s blocking, uWSGI async+ugreen serves at most 1.5x uWSGI sync: it cannot help a blocking app", Unit: "x",
		Check: ratio("uwsgi-async-ugreen", "uwsgi-sync", 100, 1.5, false)},
	{ID: "uwsgi-gevent-keeps-rate", Text: "with 0.1 s blocking, uWSGI with its gevent loop serves at least 10x uWSGI sync", Unit: "x",
		Check: ratio("uwsgi-gevent", "uwsgi-sync", 100, 10, true)},
	{ID: "no-failed-requests", Text: "no condition has a failed request, with either generator", Unit: "requests",
		Check: func(s *seriesB) (float64, string, bool, string) {
			if len(s.rows) == 0 {
				return 0, "", false, "any condition"
			}
			failed := 0
			for _, r := range s.rows {
				failed += r.Failed
			}
			return float64(failed), "= 0", failed == 0, ""
		}},
	{ID: "ours-matches-ab", Text: "without blocking, our generator's req/s is within 15 % of ab's on every server (worst |ours/ab - 1|)", Unit: "ratio",
		Check: func(s *seriesB) (float64, string, bool, string) {
			worst := 0.0
			for _, srv := range serversB {
				o, okO := s.rate(srv.ID, 0, "ours")
				a, okA := s.rate(srv.ID, 0, "ab")
				if !okO || !okA || a == 0 {
					return 0, "", false, srv.ID
				}
				worst = max(worst, abs(o/a-1))
			}
			return worst, "<= 0.15", worst <= 0.15, ""
		}},
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

func (s *seriesB) evaluate(claims []claimB) []report.Claim {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []report.Claim
	for _, cl := range claims {
		rc := report.Claim{ID: "b/" + cl.ID, Text: cl.Text, Unit: cl.Unit}
		m, th, holds, missing := cl.Check(s)
		if missing != "" {
			rc.Note = "no measurement of " + missing
		} else {
			rc.Evaluated, rc.Measured, rc.Threshold, rc.Holds = true, m, th, holds
		}
		out = append(out, rc)
	}
	s.claims = out
	return out
}
