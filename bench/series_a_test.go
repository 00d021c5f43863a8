package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"wsgilab/bench/internal/image"
	"wsgilab/bench/internal/load"
	"wsgilab/bench/internal/probe"
	"wsgilab/bench/internal/report"
	"wsgilab/bench/internal/stack"
	"wsgilab/bench/internal/stats"
)

// DefaultRuns is how many times each condition runs, as in the article.
const DefaultRuns = 3

// labRuns reads LAB_RUNS, the runs per condition.
func labRuns(t testing.TB) int {
	t.Helper()
	n, err := parseRuns(os.Getenv("LAB_RUNS"))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func parseRuns(v string) (int, error) {
	if v == "" {
		return DefaultRuns, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 100 {
		return 0, fmt.Errorf("LAB_RUNS=%q: want a whole number from 1 to 100 (runs per condition; default %d)", v, DefaultRuns)
	}
	return n, nil
}

// labRunsOr is LAB_RUNS for progress lines, at least k (benchmarks run
// as many times as -count says).
func labRunsOr(k int) int {
	n, err := parseRuns(os.Getenv("LAB_RUNS"))
	if err != nil {
		return k
	}
	return max(n, k)
}

// seriesA accumulates article A's runs and rewrites the report set after
// each one, so an interrupted series keeps every finished run.
type seriesA struct {
	mu        sync.Mutex
	runs      []report.Run
	requests  []report.Request
	downloads []report.Download
	claims    []report.Claim
	started   time.Time
}

// seriesOfA is the series TestArticleA fills; it starts with the test.
var seriesOfA = &seriesA{claims: []report.Claim{}}

// rawRun is a run's raw record, raw/<condition>-run<k>.json.
type rawRun struct {
	Condition  string                       `json:"condition"`
	Run        int                          `json:"run"`
	Pod        stack.Config                 `json:"pod"`
	Load       load.Result                  `json:"load"`
	Writes     map[string]stack.WriteRecord `json:"writes"`
	Inspection probe.Inspection             `json:"client_inspection"`
	Probe      *probe.Series                `json:"probe,omitempty"`
}

// measureA runs condition c once in a fresh pod and records the run.
func measureA(t testing.TB, c conditionA, k int) report.Run {
	t.Helper()
	began := time.Now()
	opts := []stack.Option{stack.WithServer(c.Server)}
	for _, p := range paths {
		if p.id == c.Path {
			opts = append(opts, p.opt)
		}
	}
	cfg := stack.New(lab.image, opts...)
	pod := stack.Start(t, lab.pool, cfg)

	var loadOpts = []load.Option{load.WithDownloads(c.Downloads)}
	if c.Downloads == 0 {
		loadOpts = append(loadOpts, load.WithBaseline(load.DefaultBaselineRequests))
	}
	spec := load.NewSpec(pod.URL(""), fmt.Sprintf("%s-r%d", c.ID, k), loadOpts...)
	specJSON, err := json.Marshal(spec)
	require.NoError(t, err)

	raw := rawRun{Condition: c.ID, Run: k, Pod: cfg}
	sampling, err := pod.StartProbe(probe.DefaultInterval)
	require.NoError(t, err)
	require.NoError(t, pod.ExecJSON(pod.Client, &raw.Load, image.AgentPath, "run", string(specJSON)))
	series, err := sampling.Stop()
	require.NoError(t, err, "probe")
	raw.Probe = &series
	raw.Writes, err = pod.Writes()
	require.NoError(t, err)
	raw.Inspection, err = pod.Inspect(pod.Client)
	require.NoError(t, err)
	require.NoError(t, report.WriteFile(filepath.Join(lab.reportDir, "raw"),
		fmt.Sprintf("%s-run%d.json", c.ID, k), report.JSON(raw)))

	run, reqs, dls := summarizeRun(raw, began)
	run.WallS = time.Since(began).Seconds() // the pod's teardown follows; series.json counts it
	var ends []report.WriteEnd
	for id, w := range raw.Writes {
		ends = append(ends, report.WriteEnd{ID: id, UnixNano: w.StartNs + int64(w.Write)})
	}
	observed := report.Observe(series, raw.Load, ends)
	run.Observed = &observed
	rows := report.Rows(c.ID, k, series, raw.Load.StartUnixNano)
	require.NoError(t, seriesOfA.add(run, reqs, dls, rows))
	verdict := "valid"
	if !run.Valid {
		verdict = "INVALID: " + run.Invalid
	}
	progressA.runDone(t, c.ID, k, labRunsOr(k), len(conditionsA)*labRunsOr(k),
		fmt.Sprintf("p95 %.2f ms (article %.2f), write %.3f s, completion %.3f s, lag max %.2f ms, %s",
			run.P95Ms, articleRef[c.ID].P95Ms, run.WriteS, run.CompletionS, run.LagMaxMs, verdict))
	return run
}

var articleRef = must(report.ArticleA())

// must unwraps what cannot fail but through a broken build, such as
// decoding an embedded fixture.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// summarizeRun turns the raw record into the run's report rows.
func summarizeRun(raw rawRun, began time.Time) (report.Run, []report.Request, []report.Download) {
	res := raw.Load
	run := report.Run{Condition: raw.Condition, Run: raw.Run, StartedAt: began.UTC(),
		RequestsTotal: len(res.Probes), DownloadsTotal: len(res.Downloads),
		WindowS: res.Elapsed.Seconds(), Server: raw.Pod.Server.ID, Sysctls: raw.Inspection.Sysctls}
	var problems []string

	var lat, lag stats.Latencies
	var reqs []report.Request
	for _, p := range res.Probes {
		lat.Add(p.Latency)
		lag.Add(p.Lag)
		if p.OK(res.Spec.FastBodyBytes) {
			run.RequestsOK++
		} else if len(problems) < 3 {
			problems = append(problems, fmt.Sprintf("request %d: status %d, %d bytes, %s", p.Seq, p.Status, p.Bytes, p.Error))
		}
		reqs = append(reqs, report.Request{Condition: raw.Condition, Run: raw.Run, Seq: p.Seq,
			ScheduledMs: stats.Ms(p.Scheduled), LagMs: stats.Ms(p.Lag), LatencyMs: stats.Ms(p.Latency),
			Status: p.Status, Bytes: p.Bytes, Error: p.Error})
	}
	lat.Close()
	lag.Close()
	run.P50Ms, run.P95Ms, run.MaxMs = stats.Ms(lat.P50), stats.Ms(lat.P95), stats.Ms(lat.Max)
	run.LagMaxMs, run.LagP99Ms = stats.Ms(lag.Max), stats.Ms(lag.P99)

	var writes, completions []float64
	var dls []report.Download
	for _, d := range res.Downloads {
		w, found := raw.Writes[d.ID]
		row := report.Download{Condition: raw.Condition, Run: raw.Run, ID: d.ID, Status: d.Status,
			Bytes: d.Bytes, Expected: d.Expected, Complete: d.Complete(),
			ReceiveBufferGranted: d.ReceiveBufferGranted, StartMs: stats.Ms(d.Start),
			FirstByteMs: stats.Ms(d.FirstByte), CompletionS: d.Completion.Seconds(),
			WriteS: w.Write.Seconds(), WriteComplete: w.Complete, WorkerPID: w.PID, Error: d.Error}
		dls = append(dls, row)
		switch {
		case !row.Complete:
			problems = append(problems, fmt.Sprintf("download %s incomplete: status %d, %d of %d bytes, %s",
				d.ID, d.Status, d.Bytes, d.Expected, d.Error))
		case !found || !w.Complete:
			problems = append(problems, fmt.Sprintf("download %s has no complete write record in the app", d.ID))
		default:
			run.DownloadsComplete++
		}
		writes = append(writes, row.WriteS)
		completions = append(completions, row.CompletionS)
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
	if run.RequestsOK < run.RequestsTotal {
		problems = append([]string{fmt.Sprintf("%d of %d /fast requests failed", run.RequestsTotal-run.RequestsOK, run.RequestsTotal)}, problems...)
	}
	run.Valid = len(problems) == 0
	run.Invalid = strings.Join(problems, "; ")
	return run, reqs, dls
}

func (s *seriesA) add(run report.Run, reqs []report.Request, dls []report.Download, rows report.ProbeRows) error {
	s.mu.Lock()
	s.runs = append(s.runs, run)
	s.requests = append(s.requests, reqs...)
	s.downloads = append(s.downloads, dls...)
	s.mu.Unlock()
	probed.add(rows)
	return s.write()
}

// conditions summarizes every condition that has runs, in matrix order.
func (s *seriesA) conditions() []report.Condition {
	var out []report.Condition
	for _, c := range conditionsA {
		var runs []report.Run
		for _, r := range s.runs {
			if r.Condition == c.ID {
				runs = append(runs, r)
			}
		}
		if len(runs) > 0 {
			out = append(out, report.Summarize(c.ID, runs, articleRef[c.ID]))
		}
	}
	return out
}

// evaluate checks claims on the conditions measured so far; a claim whose
// conditions did not run, or have no valid run, is not evaluated.
func (s *seriesA) evaluate(claims []claimA) []report.Claim {
	s.mu.Lock()
	defer s.mu.Unlock()
	byID := map[string]report.Condition{}
	for _, c := range s.conditions() {
		byID[c.ID] = c
	}
	var out []report.Claim
	for _, cl := range claims {
		rc := report.Claim{ID: cl.ID, Text: cl.Text, Unit: cl.Unit, Needs: cl.Needs}
		var missing []string
		for _, id := range cl.Needs {
			if byID[id].RunsValid == 0 {
				missing = append(missing, id)
			}
		}
		if len(missing) > 0 {
			rc.Note = "no valid run of " + strings.Join(missing, ", ")
		} else {
			rc.Evaluated = true
			rc.Measured, rc.Threshold, rc.Holds = cl.Check(byID)
		}
		out = append(out, rc)
	}
	s.claims = out
	return out
}

// write rewrites article A's report set from everything measured so far.
func (s *seriesA) write() error {
	if err := s.writeLocked(); err != nil {
		return err
	}
	return writeClaims()
}

func (s *seriesA) writeLocked() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	runs := slices.Clone(s.runs)
	files := []struct {
		name string
		r    report.Reporter
	}{
		{"conditions.json", report.JSON(s.conditions())},
		{"runs.json", report.JSON(runs)},
		{"requests.jsonl", report.JSONLines(s.requests)},
		{"downloads.json", report.JSON(s.downloads)},
		{"series.json", report.JSON(report.NewSeries(s.started, runs))},
		{"article_a.bench.txt", report.Benchfmt(lab.env, runs)},
	}
	for _, f := range files {
		if err := report.WriteFile(lab.reportDir, f.name, f.r); err != nil {
			return err
		}
	}
	return nil
}

// writeClaims writes claims.json: every claim evaluated so far, article A's
// then article B's.
func writeClaims() error {
	seriesOfA.mu.Lock()
	all := slices.Clone(seriesOfA.claims)
	seriesOfA.mu.Unlock()
	seriesOfB.mu.Lock()
	all = append(all, seriesOfB.claims...)
	seriesOfB.mu.Unlock()
	return report.WriteFile(lab.reportDir, "claims.json", report.JSON(all))
}

// probedRows collects the probe's series of every run, article A's and
// B's, for the four JSON-lines reports.
type probedRows struct {
	mu   sync.Mutex
	rows report.ProbeRows
}

var probed = &probedRows{}

func (p *probedRows) add(r report.ProbeRows) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rows.Resources = append(p.rows.Resources, r.Resources...)
	p.rows.Sockets = append(p.rows.Sockets, r.Sockets...)
	p.rows.Waits = append(p.rows.Waits, r.Waits...)
	p.rows.TempFiles = append(p.rows.TempFiles, r.TempFiles...)
}

// write rewrites the four series files. They grow to megabytes, so they
// are written once per condition, not per run; each run's raw record,
// written as the run ends, holds the same series meanwhile.
func (p *probedRows) write() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, f := range []struct {
		name string
		r    report.Reporter
	}{
		{"resources.jsonl", report.JSONLines(p.rows.Resources)},
		{"sockets.jsonl", report.JSONLines(p.rows.Sockets)},
		{"waits.jsonl", report.JSONLines(p.rows.Waits)},
		{"tempfiles.jsonl", report.JSONLines(p.rows.TempFiles)},
	} {
		if err := report.WriteFile(lab.reportDir, f.name, f.r); err != nil {
			return err
		}
	}
	return nil
}
