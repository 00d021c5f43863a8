package verdict

import (
	"fmt"
	"strings"

	"wsgilab/bench/internal/report"
)

// SlowReadRules are what the framework rows' twins show under slow
// readers (engine.FrameworkRows), as CellRules: the class each framework
// cell is asserted to share with its twin (TwinRule). The sync
// row's and the direct cells' are the named verdicts' of Matrix and
// article A's; engine.MatrixVerdicts asserts the others on the twins.
var SlowReadRules = []CellRule{
	{Column: slowRead, Paths: []string{direct}, Rows: []string{syncRow}, Expect: ExpectStalled,
		Why: "each of the 2 sync workers waits in its send for a slow reader, and /fast waits for a worker (sync-direct-stalls)"},
	{Column: slowRead, Paths: []string{"nginx-off"}, Rows: []string{syncRow}, Expect: ExpectUnprotected,
		Why: "with buffering off NGINX takes each response only as its client reads it, past what its buffers and the sockets' hold, so the sync workers are held for part of the download (nginx-off-2dl-not-idle)"},
	{Column: slowRead, Paths: []string{direct, "nginx-off"}, Rows: []string{eventletRow}, Expect: ExpectNoStall,
		Why: "a green thread of eventlet's hub waits for each slow reader and the rest serve /fast, but /fast's p95 lands either side of the protected line from run to run " +
			"(directly 1.4 to 10.9 ms over 5 runs under Gunicorn 23.0.0, 3.8 to 7.4 ms over 2 under 20.1.0; behind buffering off 2.5 to 11.8 ms over 3, and 2.8 to 9.4 ms over 2; " +
			"reports/measurements.md, stops 62 and 64)"},
	{Column: slowRead, Paths: []string{direct, "nginx-off"}, Expect: ExpectProtected,
		Why: "a thread of 4, a greenlet or a coroutine waits for each slow reader, directly or behind NGINX's relay, and the rest serve /fast"},
	{Column: slowRead, Paths: []string{nginxOn}, Rows: nginxOnNoStallRows(), Expect: ExpectNoStall,
		Why: "behind NGINX buffering on, /fast's p95 lands either side of the protected line from run to run for this server (NginxOnProtected's exceptions: its quarter core copies the responses NGINX takes at once, or its /fast is unsteady in every column)"},
	{Column: slowRead, Paths: []string{nginxOn}, Expect: ExpectProtected,
		Why: "NGINX takes each response at once into its buffers and temp file, and feeds the slow readers itself"},
}

// TwinRule is the rule a framework or version cell of column col on
// path is asserted under: its twin row's (SlowReadRules for slow
// readers, CellRules for the other columns), false when the twin has
// none.
func TwinRule(col, twin, path string) (CellRule, bool) {
	if col != slowRead {
		return RuleFor(col, twin, path)
	}
	return firstRule(SlowReadRules, col, twin, path)
}

// FrameworkVerdict is the verdict that the framework cell measured by
// condition id (row, serving framework's app) falls in the class of its
// framework-free twin under the same server, column and path: it meets
// the twin's rule r, which the twin's own verdicts assert of the twin.
// Article A: "do not infer behavior from the framework's name alone".
func FrameworkVerdict(r CellRule, framework, row, twin, path, id string) Verdict {
	v := CellVerdict(r, row, path, id)
	v.ID = strings.TrimPrefix(id, "matrix-") + "-as-framework-free"
	v.Text = fmt.Sprintf("%s's app on %s %s under %s falls in the class of the framework-free app on %s (%s): %s",
		framework, row, pathText(path), r.Column, twin, r.Expect, r.Why)
	return v
}

// P50 is /fast's median latency (the median of the runs' p50).
var P50 = measured("p50", func(c report.Condition) float64 { return c.P50Ms })

// FrameworkCostMs is the most a framework may add to /fast's p50 in a cell
// where its twin is not held up (FrameworkCost). Over 3 runs of each of
// the 45 such cells (an AMD EPYC, 2026-12-07; reports/measurements.md,
// stop 63) the framework added -0.07 to 0.81 ms to the median p50, and
// a single run's p50 lay at most 0.95 ms over its twin's median (Django's
// under gevent behind NGINX under slow uploads): the line is twice that.
// A framework that did real work per request (DEBUG on, a middleware
// that touched a database) would cross it.
const FrameworkCostMs = 2

// CostsAtMost holds when m of condition a exceeds m of condition b by at
// most by; the measured value is the excess.
func CostsAtMost(a, b string, m Metric, by float64) Check {
	return condCheck{[]string{a, b}, m, func(v []float64) Outcome {
		return Outcome{v[0] - v[1], fmt.Sprintf("<= %g over %s's %.4g", by, b, v[1]), v[0]-v[1] <= by}
	}, true}
}

// FrameworkCost is the verdict that the framework cell measured by
// condition id adds at most FrameworkCostMs to /fast's p50 of its twin's
// cell twinID, where the twin's rule r expects /fast unheld (protected,
// or under the stall line); false elsewhere, where /fast's median is the
// wait for a held worker, not the framework's work.
func FrameworkCost(r CellRule, framework, row, path, id, twinID string) (Verdict, bool) {
	if r.Expect != ExpectProtected && r.Expect != ExpectNoStall {
		return Verdict{}, false
	}
	return Verdict{ID: strings.TrimPrefix(id, "matrix-") + "-framework-cost", Kind: Lab, Unit: "ms",
		Check: CostsAtMost(id, twinID, P50, FrameworkCostMs),
		Text: fmt.Sprintf("%s's routing, request and response objects add under %d ms to /fast's median on %s %s under %s (-0.07 to 0.81 ms measured over the 45 such cells, 3 runs each)",
			framework, FrameworkCostMs, row, pathText(path), r.Column)}, true
}
