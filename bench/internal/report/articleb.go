package report

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"wsgilab/fixtures"
)

// ArticleBServer is article B's figures for one server.
type ArticleBServer struct {
	ReqPerS         float64 `json:"req_per_s"`
	Block100ReqPerS float64 `json:"block100_req_per_s"`
	Block100Note    string  `json:"block100_note"`
}

// ArticleB reads the article's figures (fixtures/article/article-b.json).
func ArticleB() (map[string]ArticleBServer, error) {
	var ref struct {
		Servers map[string]ArticleBServer `json:"servers"`
	}
	if err := json.Unmarshal(fixtures.ArticleB, &ref); err != nil {
		return nil, fmt.Errorf("report: article-b.json: %w", err)
	}
	return ref.Servers, nil
}

// BenchfmtB is a Reporter of article B's rows in Go benchmark format:
//
//	BenchmarkArticleB/gunicorn-sync-block0/ours 1 312.5 req/s 250 p50-ms 400 p95-ms 450 p99-ms 0 failed
func BenchfmtB(env Environment, rows []Throughput) Reporter {
	return func(w io.Writer) error {
		fmt.Fprintf(w, "goos: linux\ngoarch: %s\npkg: wsgilab/bench\ncpu: %s\ncommit: %s\n",
			env.Docker.Arch, env.Versions.CPUModel, env.GitCommit)
		sorted := slices.Clone(rows)
		slices.SortStableFunc(sorted, func(a, b Throughput) int { return strings.Compare(a.ID, b.ID) })
		for _, r := range sorted {
			fmt.Fprintf(w, "BenchmarkArticleB/%s/%s 1 %.4f req/s %.4f p50-ms %.4f p95-ms %.4f p99-ms %d failed\n",
				r.ID, r.Generator, r.ReqPerS, r.P50Ms, r.P95Ms, r.P99Ms, r.Failed)
		}
		return nil
	}
}

// Throughput is one condition and generator of article B: an element of
// throughput.json.
type Throughput struct {
	// ID is the condition id, e.g. "gunicorn-sync-block100".
	ID string `json:"id"`
	// Server names the server and worker model, e.g. "gunicorn-gevent".
	Server string `json:"server"`
	// Generator is "ours" (labagent's closed loop) or "ab" (Apache Bench).
	Generator  string `json:"generator"`
	BlockingMs int    `json:"blocking_ms"`
	N          int    `json:"n"`
	C          int    `json:"c"`
	// TotalS and ReqPerS are medians over the repeats; ReqPerSRuns has
	// each repeat's rate, in order.
	TotalS      float64   `json:"total_s"`
	ReqPerS     float64   `json:"req_per_s"`
	ReqPerSRuns []float64 `json:"req_per_s_runs"`
	// Failed counts failed requests over all repeats, by kind in FailedBy
	// (connect, receive, length, non-2xx).
	Failed   int            `json:"failed"`
	FailedBy map[string]int `json:"failed_by"`
	P50Ms    float64        `json:"p50_ms"`
	P95Ms    float64        `json:"p95_ms"`
	P99Ms    float64        `json:"p99_ms"`
	// GeneratorCPUS is the generator's CPU time, user plus system.
	GeneratorCPUS float64 `json:"generator_cpu_s"`
	// GeneratorBusy is the share of its core the generator used: its CPU
	// time over the run's wall time, median over the repeats (each in
	// GeneratorBusyRuns). Near 1 the generator, not the server, sets the
	// rate.
	GeneratorBusy     float64   `json:"generator_busy"`
	GeneratorBusyRuns []float64 `json:"generator_busy_runs"`
	// ServerCPUPercent and ServerThrottledShare are the app container's
	// CPU (% of one core; its limit is 100) and the share of its CFS
	// periods that hit the quota, from the probe.
	ServerCPUPercent     float64 `json:"server_cpu_percent"`
	ServerThrottledShare float64 `json:"server_throttled_share"`
	// ArticleReqPerS is the article's figure for this server and blocking
	// (the mean of its two runs; 0 where it gave none).
	ArticleReqPerS float64 `json:"article_req_per_s"`
	ArticleNote    string  `json:"article_note,omitempty"`
}
