package gate

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var rules = Thresholds{Units: map[string]Rule{
	"p95-ms": {Worse: Higher, Percent: 20},
	"req/s":  {Worse: Lower, Percent: 15},
}}

// series writes a benchmark file: one line per value, each with a p95-ms
// and a req/s metric, as make bench writes them.
func series(name, procs string, p95 []float64, reqs []float64) string {
	var b strings.Builder
	b.WriteString("goos: linux\ngoarch: amd64\npkg: wsgilab/bench\n")
	for i := range p95 {
		fmt.Fprintf(&b, "Benchmark%s%s \t1\t%d ns/op\t%g p95-ms\t%g req/s\n", name, procs, 10_000_000_000+i, p95[i], reqs[i])
	}
	return b.String()
}

func read(t *testing.T, s string) Samples {
	t.Helper()
	out, err := Read(strings.NewReader(s), "t.txt")
	require.NoError(t, err)
	return out
}

func row(t *testing.T, r Report, unit string) Row {
	t.Helper()
	for _, x := range r.Rows {
		if x.Unit == unit {
			return x
		}
	}
	t.Fatalf("no %s row in %+v", unit, r.Rows)
	return Row{}
}

// scale multiplies each value.
func scale(xs []float64, f float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = x * f
	}
	return out
}

// Eight values within ±3 % of 100, as a quiet cell's p95 is.
var quiet = []float64{97, 98, 99, 100, 100, 101, 102, 103}

func TestGate(t *testing.T) {
	base := read(t, series("ArticleA/direct-2dl", "-2", quiet, scale(quiet, 10)))

	t.Run("same-distribution-passes", func(t *testing.T) {
		nw := read(t, series("ArticleA/direct-2dl", "-2", []float64{99, 103, 97, 100, 102, 98, 101, 100}, scale(quiet, 10.1)))
		r := Compare(base, nw, rules)
		assert.False(t, r.Failed())
		assert.Equal(t, Pass, row(t, r, "p95-ms").Verdict)
		assert.Equal(t, Pass, row(t, r, "req/s").Verdict)
		assert.Equal(t, Ungated, row(t, r, "sec/op").Verdict, "ns/op is read as sec/op and not gated")
	})

	t.Run("significant-regression-fails", func(t *testing.T) {
		// p95 +50 %, req/s -30 %, both clear of the noise.
		nw := read(t, series("ArticleA/direct-2dl", "-2", scale(quiet, 1.5), scale(quiet, 7)))
		r := Compare(base, nw, rules)
		assert.True(t, r.Failed())
		p := row(t, r, "p95-ms")
		assert.Equal(t, Regression, p.Verdict)
		assert.InDelta(t, 50, p.ChangePct, 0.01)
		assert.Less(t, p.P, 0.05)
		assert.Equal(t, Regression, row(t, r, "req/s").Verdict, "lower is worse for req/s")
	})

	t.Run("significant-but-within-threshold-passes", func(t *testing.T) {
		nw := read(t, series("ArticleA/direct-2dl", "-2", scale(quiet, 1.1), scale(quiet, 9.5)))
		r := Compare(base, nw, rules)
		assert.False(t, r.Failed())
		p := row(t, r, "p95-ms")
		assert.Less(t, p.P, 0.05, "a real change ...")
		assert.Equal(t, Pass, p.Verdict, "... of +10 %, inside +20 %")
	})

	t.Run("too-noisy-to-decide-passes-as-noisy", func(t *testing.T) {
		// The median moves +30 %, but the new runs spread from 60 to 400:
		// the samples overlap, p is far above alpha.
		nw := read(t, series("ArticleA/direct-2dl", "-2", []float64{60, 70, 95, 130, 131, 140, 300, 400}, scale(quiet, 10)))
		r := Compare(base, nw, rules)
		p := row(t, r, "p95-ms")
		assert.Greater(t, p.ChangePct, 20.0)
		assert.GreaterOrEqual(t, p.P, 0.05)
		assert.Equal(t, Noisy, p.Verdict)
		assert.False(t, r.Failed(), "noise is not a regression")
	})

	t.Run("too-few-samples-cannot-decide", func(t *testing.T) {
		// Three runs each, as make bench's default: a U test cannot reach
		// 0.05 with 3+3 whatever the values (its least p is 0.1). The gate
		// neither passes nor fails: it cannot decide, and says so.
		b3 := read(t, series("X", "-2", []float64{100, 101, 102}, []float64{1, 1, 1}))
		n3 := read(t, series("X", "-2", []float64{200, 201, 202}, []float64{1, 1, 1}))
		r := Compare(b3, n3, rules)
		p := row(t, r, "p95-ms")
		assert.Equal(t, TooFew, p.Verdict)
		assert.False(t, r.Failed())
		assert.True(t, r.Undecided())
		var out strings.Builder
		require.NoError(t, r.Text(&out))
		assert.Contains(t, out.String(), "UNDECIDED: gated rows have too few samples")
		// 4 a side can decide (least p 0.029).
		b4 := read(t, series("X", "-2", []float64{100, 101, 102, 103}, []float64{1, 1, 1, 1}))
		n4 := read(t, series("X", "-2", []float64{200, 201, 202, 203}, []float64{1, 1, 1, 1}))
		r = Compare(b4, n4, rules)
		assert.Equal(t, Regression, row(t, r, "p95-ms").Verdict)
		assert.False(t, r.Undecided())
	})

	t.Run("missing-data-fails", func(t *testing.T) {
		nw := read(t, "BenchmarkArticleA/direct-2dl-2 \t1\t10 ns/op\t100 p95-ms\n")
		r := Compare(base, nw, rules)
		assert.Equal(t, Missing, row(t, r, "req/s").Verdict)
		assert.True(t, r.Failed())
	})

	t.Run("improvement-passes", func(t *testing.T) {
		nw := read(t, series("ArticleA/direct-2dl", "-2", scale(quiet, 0.5), scale(quiet, 20)))
		r := Compare(base, nw, rules)
		assert.False(t, r.Failed())
		assert.Equal(t, Better, row(t, r, "p95-ms").Verdict)
		assert.Equal(t, Better, row(t, r, "req/s").Verdict)
	})

	t.Run("steps-are-not-gomaxprocs", func(t *testing.T) {
		// article_a.bench.txt's names have no GOMAXPROCS suffix; a step
		// number at the end of some of them is not one.
		f := "BenchmarkArticleA/stack-x-slow-read-1 1 1 ns/op 2 p95-ms\n" +
			"BenchmarkArticleA/stack-x-slow-read-2 1 1 ns/op 5900 p95-ms\n" +
			"BenchmarkArticleA/direct-2dl 1 1 ns/op 5900 p95-ms\n"
		got := read(t, f)
		assert.Len(t, got, 6, "3 names x 2 units, none merged")
		assert.Contains(t, got, key{"ArticleA/stack-x-slow-read-2", "p95-ms"})
	})

	t.Run("gomaxprocs-suffix-ignored", func(t *testing.T) {
		nw := read(t, series("ArticleA/direct-2dl", "-8", quiet, scale(quiet, 10)))
		r := Compare(base, nw, rules)
		assert.Len(t, r.Rows, 3, "one row per unit, names matched across core counts")
		assert.Equal(t, "ArticleA/direct-2dl", r.Rows[0].Name)
	})
}

func TestReportText(t *testing.T) {
	base := read(t, series("A", "-2", quiet, scale(quiet, 10)))
	nw := read(t, series("A", "-2", scale(quiet, 1.5), scale(quiet, 10)))
	var b strings.Builder
	r := Compare(base, nw, rules)
	require.NoError(t, r.Text(&b))
	out := b.String()
	assert.Contains(t, out, "benchmark")
	assert.Contains(t, out, "REGRESSION")
	assert.Contains(t, out, "+50.0%")
	assert.Contains(t, out, "+20%")
	assert.Contains(t, out, "FAIL: 1 of 3 rows: [A p95-ms]")
}

func TestReadRefuses(t *testing.T) {
	_, err := Read(strings.NewReader("PASS\nok wsgilab/bench 1s\n"), "empty.txt")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no benchmark results")
}

func TestThresholds(t *testing.T) {
	good := "alpha: 0.05\nunits:\n  p95-ms: {worse: higher, percent: 20}\n  req/s: {worse: lower, percent: 15}\n"
	th, err := ParseThresholds([]byte(good))
	require.NoError(t, err)
	assert.Equal(t, Rule{Worse: Lower, Percent: 15}, th.Units["req/s"])

	for name, tc := range map[string]struct{ in, want string }{
		"unknown key":   {"alpha: 0.05\nunit: {}\n", "field unit not found"},
		"unknown rule":  {"units:\n  p95-ms: {worse: higher, pct: 20}\n", "field pct not found"},
		"worse":         {"units:\n  p95-ms: {worse: up, percent: 20}\n", `units.p95-ms.worse "up": want "higher" or "lower"`},
		"percent zero":  {"units:\n  p95-ms: {worse: higher}\n", "units.p95-ms.percent 0: want above 0"},
		"percent huge":  {"units:\n  p95-ms: {worse: higher, percent: 5000}\n", "units.p95-ms.percent 5000"},
		"alpha":         {"alpha: 0.9\nunits:\n  p95-ms: {worse: higher, percent: 20}\n", "alpha 0.9: want above 0 and below 0.5"},
		"no units":      {"alpha: 0.05\n", "units: empty"},
		"two documents": {good + "---\n" + good, "a second YAML document"},
		"not yaml":      {"units: [\n", "yaml"},
		"nan percent":   {"units:\n  p95-ms: {worse: higher, percent: .nan}\n", "units.p95-ms.percent NaN"},
		"nan alpha":     {"alpha: .nan\nunits:\n  p95-ms: {worse: higher, percent: 20}\n", "alpha NaN"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseThresholds([]byte(tc.in))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
