package engine

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"wsgilab/bench/internal/report"
)

// RunLine is a progress summary of r, a run of c.
func RunLine(c Condition, r report.Run) string {
	verdict := "valid"
	switch {
	case !r.Sound:
		verdict = "INVALID: " + r.Invalid
	case !r.Valid:
		verdict = "server failed (sound run): " + r.Invalid
	}
	ref := ""
	if a, ok := articleFigures[c.Ref]; ok {
		ref = fmt.Sprintf(" (article %.2f)", a.P95Ms)
	}
	var extra string
	if len(r.SlowOutcomes) > 0 {
		var out []string
		for _, o := range slices.Sorted(maps.Keys(r.SlowOutcomes)) {
			out = append(out, fmt.Sprintf("%d %s", r.SlowOutcomes[o], o))
		}
		extra += ", slow clients " + strings.Join(out, ", ")
	}
	if r.WorkerTimeouts > 0 {
		extra += fmt.Sprintf(", %d worker timeouts", r.WorkerTimeouts)
	}
	if s := r.Stream; s != nil {
		extra += fmt.Sprintf(", %d of %d events, delay p95 %.2f ms, first %.2f ms", s.Events, s.Expected, s.DelayP95Ms, s.FirstEventDelayMs)
	}
	return fmt.Sprintf("p95 %.2f ms%s, write %.3f s, completion %.3f s, lag max %.2f ms%s, %s",
		r.P95Ms, ref, r.WriteS, r.CompletionS, r.LagMaxMs, extra, verdict)
}

// RowLine is an article B row's progress summary.
func RowLine(row report.Throughput) string {
	verdict := "no failed request"
	if row.Failed > 0 {
		verdict = fmt.Sprintf("FAILED %d %v", row.Failed, row.FailedBy)
	}
	return fmt.Sprintf("%.1f req/s (runs %.0f; article %.1f %s), p50 %.0f ms, p99 %.0f ms, generator CPU %.2f s, server CPU %.0f%%, %s",
		row.ReqPerS, row.ReqPerSRuns, row.ArticleReqPerS, row.ArticleNote,
		row.P50Ms, row.P99Ms, row.GeneratorCPUS, row.ServerCPUPercent, verdict)
}
