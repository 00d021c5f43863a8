package verdict

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"wsgilab/bench/internal/report"
)

// Metric reads one figure of a condition summary, or says why it cannot.
type Metric struct {
	Name string
	of   func(report.Condition) (float64, error)
	// over is how the summary folds the runs' own figures into this one:
	// their median, their largest or their least; or in a way no bound
	// is kept for (the zero value: sums, shares of runs).
	over fold
	// explain, when set, says where a condition's figure comes from (the
	// claim's note): a harness check that fails names its sample.
	explain func(report.Condition) string
}

// fold is how a summary's figure comes from its runs' (Metric.over).
type fold int

const (
	foldOther fold = iota
	foldMedian
	foldLargest
	foldLeast
)

// folded is m with its figure folded from the runs' by f.
func folded(m Metric, f fold) Metric {
	m.over = f
	return m
}

var errNoValidRun = errors.New("no valid run")

// measured is a metric every valid run has (latency, write, completion).
func measured(name string, f func(report.Condition) float64) Metric {
	return Metric{Name: name, over: foldMedian, of: func(c report.Condition) (float64, error) {
		if c.RunsValid == 0 {
			return 0, errNoValidRun
		}
		return f(c), nil
	}}
}

// sampled is a metric from the /proc sampler, absent (nil) when a valid
// run lacked it.
func sampled(name string, f func(report.Condition) *float64) Metric {
	return optional(name, fmt.Errorf("no %s from the sampler", name), f)
}

// optional is a metric a valid run may lack (f gives nil), missing then
// for why.
func optional(name string, why error, f func(report.Condition) *float64) Metric {
	return Metric{Name: name, over: foldMedian, of: func(c report.Condition) (float64, error) {
		if c.RunsValid == 0 {
			return 0, errNoValidRun
		}
		v := f(c)
		if v == nil {
			return 0, why
		}
		return *v, nil
	}}
}

// explained is m with its figures explained by f.
func explained(m Metric, f func(report.Condition) string) Metric {
	m.explain = f
	return m
}

// withDownloads is a metric that exists only when the runs had slow
// clients with a body (not held connections, which the app keeps no
// record of).
func withDownloads(m Metric) Metric {
	return Metric{Name: m.Name, over: m.over, explain: m.explain, of: func(c report.Condition) (float64, error) {
		if c.SlowKind == "headers" || c.SlowKind == "silent" || c.SlowKind == "idle" {
			return 0, fmt.Errorf("%s slow clients hold a connection and have no %s", c.SlowKind, m.Name)
		}
		if c.DownloadsComplete == 0 {
			return 0, errors.New("no complete download")
		}
		return m.of(c)
	}}
}

// The metrics verdicts read.
var (
	P95 = measured("p95", func(c report.Condition) float64 { return c.P95Ms })
	// P95Least is the least p95 of a condition's valid runs: what a host
	// disturbance, which only ever adds latency, leaves of the cell's own.
	P95Least    = folded(measured("least p95 of the runs", func(c report.Condition) float64 { return c.P95MsMin }), foldLeast)
	WriteS      = withDownloads(measured("write time", func(c report.Condition) float64 { return c.WriteS }))
	CompletionS = withDownloads(measured("completion time", func(c report.Condition) float64 { return c.CompletionS }))
	TempPeak    = sampled("temp-file peak", func(c report.Condition) *float64 { return c.TempfilePeakMiB })
	TempPeakMax = folded(sampled("largest temp-file peak", func(c report.Condition) *float64 { return c.TempfilePeakMiBMax }), foldLargest)
	// ProxyMemPeak is the proxy container's memory peak, MiB.
	ProxyMemPeak = sampled("proxy memory peak", func(c report.Condition) *float64 { return c.ProxyMemoryPeakMiB })
	AppCPU       = sampled("app CPU", func(c report.Condition) *float64 { return c.AppCPUPercent })
	// AppMemGrowth is what the window added to the app's memory, MiB.
	AppMemGrowth = sampled("app memory growth", func(c report.Condition) *float64 { return c.AppMemoryGrowthMiB })
	LeastBlocked = sampled("least blocked worker's send share", func(c report.Condition) *float64 { return c.AppWorkerSendShareMin })
	MostBlocked  = sampled("most blocked worker's send share", func(c report.Condition) *float64 { return c.AppWorkerSendShareMax })
	// P95H2 is /fast's p95 over HTTP/2 (report.Condition.P95MsH2), on a
	// path whose entry point speaks it.
	P95H2 = optional("p95 over HTTP/2", errors.New("no /fast series over HTTP/2 in every valid run (a path whose entry point takes HTTP/1.1 and HTTP/2 has one)"),
		func(c report.Condition) *float64 { return c.P95MsH2 })
	// WorkersHeld is how many app workers a client held for a quarter of
	// the window or more: behind a front door, the upstream workers held.
	WorkersHeld = sampled("app workers held", func(c report.Condition) *float64 { return c.AppWorkersHeld })
	// WorkersFree is how many app workers no client held.
	WorkersFree = sampled("app workers no client held", func(c report.Condition) *float64 { return c.AppWorkersFree })
	// AcceptQueue is the most connections waiting at once to be accepted.
	AcceptQueue = sampled("accept-queue peak", func(c report.Condition) *float64 { return c.AcceptQueuePeak })
	SendQBusy   = withDownloads(sampled("app send-queue busy share", func(c report.Condition) *float64 { return c.AppSendQBusyShare }))
	// WriteEndMismatch is the largest report.WriteEndQueues.Mismatch at
	// the app's write end, unread counted from the client's own reads.
	WriteEndMismatch = explained(withDownloads(folded(sampled("queued-against-unread check", func(c report.Condition) *float64 { return c.WriteEndMismatchMax }), foldLargest)),
		func(c report.Condition) string {
			if c.WriteEndWorst == nil {
				return ""
			}
			return "worst: " + c.WriteEndWorst.Describe()
		})
)

// condCheck reads metric m of each condition in ids and judges the values.
type condCheck struct {
	ids   []string
	m     Metric
	judge func(v []float64) Outcome
	// convex says that the values judge holds on are a convex set: when
	// it holds at every corner of a box of values, it holds on the whole
	// box (HoldsWhatever relies on it). Below, Above, AllAbove, Between,
	// Zero and Less are: half-lines, half-planes and their intersections.
	convex bool
}

func (c condCheck) Needs() []string { return c.ids }

func (c condCheck) Eval(d Data) (Outcome, error) {
	vals := make([]float64, len(c.ids))
	for i, id := range c.ids {
		cond, ok := d.Conditions[id]
		if !ok {
			return Outcome{}, fmt.Errorf("%s: no summary", id)
		}
		v, err := c.m.of(cond)
		if err != nil {
			return Outcome{}, fmt.Errorf("%s: %w", id, err)
		}
		vals[i] = v
	}
	return c.judge(vals), nil
}

// Note is what the metric's explain says of each condition read, when
// it has one.
func (c condCheck) Note(d Data) string {
	if c.m.explain == nil {
		return ""
	}
	var notes []string
	for _, id := range c.ids {
		if n := c.m.explain(d.Conditions[id]); n != "" {
			notes = append(notes, id+" "+n)
		}
	}
	return strings.Join(notes, "; ")
}

// Below holds when m of condition id is under limit.
func Below(id string, m Metric, limit float64) Check {
	return condCheck{[]string{id}, m, func(v []float64) Outcome {
		return Outcome{v[0], fmt.Sprintf("< %g", limit), v[0] < limit}
	}, true}
}

// Above holds when m of condition id is over limit.
func Above(id string, m Metric, limit float64) Check {
	return condCheck{[]string{id}, m, func(v []float64) Outcome {
		return Outcome{v[0], fmt.Sprintf("> %g", limit), v[0] > limit}
	}, true}
}

// AllAbove holds when m of every condition of ids is over limit; the
// measured value is the smallest.
func AllAbove(ids []string, m Metric, limit float64) Check {
	return condCheck{ids, m, func(v []float64) Outcome {
		low := slices.Min(v)
		return Outcome{low, fmt.Sprintf("> %g in each of %d conditions", limit, len(v)), low > limit}
	}, true}
}

// Between holds when m of condition id is in [lo, hi].
func Between(id string, m Metric, lo, hi float64) Check {
	return condCheck{[]string{id}, m, func(v []float64) Outcome {
		return Outcome{v[0], fmt.Sprintf("%g to %g", lo, hi), v[0] >= lo && v[0] <= hi}
	}, true}
}

// Zero holds when m of condition id is exactly 0.
func Zero(id string, m Metric) Check {
	return condCheck{[]string{id}, m, func(v []float64) Outcome {
		return Outcome{v[0], "= 0", v[0] == 0}
	}, true}
}

// Less holds when m of condition a is under m of condition b; the
// measured value is a's.
func Less(a, b string, m Metric) Check {
	return condCheck{[]string{a, b}, m, func(v []float64) Outcome {
		return Outcome{v[0], fmt.Sprintf("< %.4g (%s)", v[1], b), v[0] < v[1]}
	}, true}
}
