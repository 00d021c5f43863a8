package htmlreport

import (
	"cmp"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"wsgilab/bench/internal/engine"
	"wsgilab/bench/internal/report"
)

var fixtureFrom = flag.String("fixture-from", "",
	"rebuild fixtures/report by trimming this real report directory of make test (then rerun with -update)")

// fixtureRuns and fixtureThin trim the fixture: the first runs of each of
// fixtureConditions, and every fixtureThin-th probe sample of the first
// run of each two-download condition (the run the charts show).
const (
	fixtureRuns = 2
	fixtureThin = 3
)

// TestBuildFixture rebuilds fixtures/report from the report directory of
// a real `make test` (article A, article B and gotestsum's test.json):
//
//	make test LAB_REPORT_DIR=/tmp/labci
//	go test ./bench/internal/htmlreport -run TestBuildFixture -fixture-from /tmp/labci
//	go test ./bench/internal/htmlreport -run TestGolden -update
//
// conditions.json is summarized again, by the engine, from the runs kept;
// everything else is the series' own, trimmed (fixtures/report/README.md).
func TestBuildFixture(t *testing.T) {
	if *fixtureFrom == "" {
		t.Skip("set -fixture-from DIR (a make test report directory) to rebuild fixtures/report")
	}
	src, err := load(*fixtureFrom)
	require.NoError(t, err)
	require.NotNil(t, src.throughput, "no throughput.json in %s", *fixtureFrom)
	require.NotNil(t, src.tests, "no test.json in %s", *fixtureFrom)
	dst := fixtureDir
	require.NoError(t, os.MkdirAll(dst, 0o755))

	keep := func(c string, run int) bool { return slices.Contains(fixtureConditions, c) && run <= fixtureRuns }
	sampled := func(c string, run int) bool { return slices.Contains(fixtureTwo, c) && run == 1 }

	runs := filter(src.runs, func(r report.Run) bool { return keep(r.Condition, r.Run) })
	slices.SortStableFunc(runs, func(a, b report.Run) int {
		return cmp.Or(cmp.Compare(slices.Index(fixtureConditions, a.Condition), slices.Index(fixtureConditions, b.Condition)),
			cmp.Compare(a.Run, b.Run))
	})
	ref, err := report.ArticleA()
	require.NoError(t, err)
	var conds []report.Condition
	for _, id := range fixtureConditions {
		i := slices.IndexFunc(engine.ArticleA, func(c engine.Condition) bool { return c.ID == id })
		require.GreaterOrEqual(t, i, 0, id)
		conds = append(conds, engine.SummarizeCondition(engine.ArticleA[i], filter(runs, func(r report.Run) bool { return r.Condition == id }), ref[id]))
	}

	write := func(name string, r report.Reporter) { require.NoError(t, report.WriteFile(dst, name, r)) }
	write("conditions.json", report.JSON(conds))
	write("runs.json", report.JSON(runs))
	write("claims.json", report.JSON(src.claims))
	write("series.json", report.JSON(src.series))
	write("environment.json", report.JSON(src.env))
	write("downloads.json", report.JSON(filter(src.downloads, func(d report.Download) bool { return keep(d.Condition, d.Run) })))
	write("requests.jsonl", report.JSONLines(filter(src.requests, func(r report.Request) bool { return keep(r.Condition, r.Run) })))
	write("sockets.jsonl", report.JSONLines(thinRows(filter(src.sockets, func(r report.SocketRow) bool { return sampled(r.Condition, r.Run) }),
		func(r report.SocketRow) (string, int, float64) { return r.Condition, r.Run, r.TMs })))
	write("resources.jsonl", report.JSONLines(thinRows(filter(src.resources, func(r report.ResourceRow) bool { return sampled(r.Condition, r.Run) }),
		func(r report.ResourceRow) (string, int, float64) { return r.Condition, r.Run, r.TMs })))
	write("tempfiles.jsonl", report.JSONLines(thinRows(filter(src.tempfiles, func(r report.TempFileRow) bool { return keep(r.Condition, r.Run) }),
		func(r report.TempFileRow) (string, int, float64) { return r.Condition, r.Run, r.TMs })))
	write("throughput.json", report.JSON(src.throughput))
	if src.sweep != nil {
		write("sweep.json", report.JSON(src.sweep))
	}
	if src.exhaustion != nil {
		write("exhaustion.json", report.JSON(src.exhaustion))
	}
	write("test.json", report.JSONLines(trimTests(src.tests)))
}

// trimTests keeps a real test.json's events of packages, top-level tests,
// article A's kept conditions, every verdict and article B's cells,
// without the passing tests' output lines.
func trimTests(evs []testEvent) []testEvent {
	quiet := map[string]bool{} // tests that passed: their output is dropped
	for _, e := range evs {
		if e.Action == "pass" {
			quiet[e.Package+" "+e.Test] = true
		}
	}
	return filter(evs, func(e testEvent) bool {
		if e.Action == "output" && (e.Test == "" || quiet[e.Package+" "+e.Test]) {
			return false
		}
		if e.Test == "" || !strings.Contains(e.Test, "/") {
			return true
		}
		if strings.HasPrefix(e.Test, "TestArticleA/") && !strings.HasPrefix(e.Test, "TestArticleA/claims") {
			c, rest, _ := strings.Cut(strings.TrimPrefix(e.Test, "TestArticleA/"), "/")
			if !slices.Contains(fixtureConditions, c) {
				return false
			}
			var run int
			if _, err := fmt.Sscanf(rest, "run%d", &run); err == nil && run > fixtureRuns {
				return false
			}
		}
		return true
	})
}

func filter[T any](xs []T, keep func(T) bool) []T {
	out := []T{}
	for _, x := range xs {
		if keep(x) {
			out = append(out, x)
		}
	}
	return out
}

// thinRows keeps the rows of every fixtureThin-th sample time of each
// condition and run.
func thinRows[T any](rows []T, key func(T) (string, int, float64)) []T {
	type cr struct {
		c string
		r int
	}
	times := map[cr][]float64{}
	for _, x := range rows {
		c, r, t := key(x)
		if !slices.Contains(times[cr{c, r}], t) {
			times[cr{c, r}] = append(times[cr{c, r}], t)
		}
	}
	return filter(rows, func(x T) bool {
		c, r, t := key(x)
		ts := slices.Sorted(slices.Values(times[cr{c, r}]))
		return slices.Index(ts, t)%fixtureThin == 0
	})
}
