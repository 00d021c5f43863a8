package htmlreport

import (
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"wsgilab/bench/internal/report"
)

var (
	fixtureFrom = flag.String("fixture-from", "",
		"rebuild fixtures/report by trimming this real article A report directory (then rerun with -update)")
	fixtureFromB = flag.String("fixture-from-b", "",
		"with -fixture-from: the real article B report directory whose throughput and claims join the fixture")
)

// fixtureRuns and fixtureThin trim the fixture: the first runs of each of
// fixtureConditions, and every fixtureThin-th probe sample of the first
// run of each two-download condition (the run the charts show).
const (
	fixtureRuns = 2
	fixtureThin = 3
)

// TestBuildFixture rebuilds fixtures/report from real series of article A
// and article B:
//
//	go test ./bench/internal/htmlreport -run TestBuildFixture -fixture-from /tmp/lab5p -fixture-from-b /tmp/labB2
//	go test ./bench/internal/htmlreport -run TestGolden -update
//
// conditions.json is summarized again from the runs kept; series.json and
// environment.json are article A's series' own, throughput.json article
// B's; claims.json is A's claims then B's, as one series writes them.
// test.json is made from the runs, rows and claims kept
// (fixtures/report/README.md).
func TestBuildFixture(t *testing.T) {
	if *fixtureFrom == "" || *fixtureFromB == "" {
		t.Skip("set -fixture-from DIR and -fixture-from-b DIR to rebuild fixtures/report")
	}
	src, err := load(*fixtureFrom)
	require.NoError(t, err)
	srcB, err := load(*fixtureFromB)
	require.NoError(t, err)
	require.NotNil(t, srcB.throughput, "no throughput.json in %s", *fixtureFromB)
	claimsA := filter(src.claims, func(c report.Claim) bool { return !strings.HasPrefix(c.ID, "b/") })
	claimsB := filter(srcB.claims, func(c report.Claim) bool { return strings.HasPrefix(c.ID, "b/") })
	dst := fixtureDir
	require.NoError(t, os.MkdirAll(dst, 0o755))

	keep := func(c string, run int) bool { return slices.Contains(fixtureConditions, c) && run <= fixtureRuns }
	probed := func(c string, run int) bool { return slices.Contains(fixtureTwo, c) && run == 1 }

	runs := filter(src.runs, func(r report.Run) bool { return keep(r.Condition, r.Run) })
	slices.SortStableFunc(runs, func(a, b report.Run) int {
		return cmp.Or(cmp.Compare(slices.Index(fixtureConditions, a.Condition), slices.Index(fixtureConditions, b.Condition)),
			cmp.Compare(a.Run, b.Run))
	})
	ref, err := report.ArticleA()
	require.NoError(t, err)
	var conds []report.Condition
	for _, id := range fixtureConditions {
		conds = append(conds, report.Summarize(id, filter(runs, func(r report.Run) bool { return r.Condition == id }), ref[id]))
	}

	write := func(name string, r report.Reporter) { require.NoError(t, report.WriteFile(dst, name, r)) }
	write("conditions.json", report.JSON(conds))
	write("runs.json", report.JSON(runs))
	write("claims.json", report.JSON(append(slices.Clone(claimsA), claimsB...)))
	write("series.json", report.JSON(src.series))
	write("environment.json", report.JSON(src.env))
	write("downloads.json", report.JSON(filter(src.downloads, func(d report.Download) bool { return keep(d.Condition, d.Run) })))
	write("requests.jsonl", report.JSONLines(filter(src.requests, func(r report.Request) bool { return keep(r.Condition, r.Run) })))
	write("sockets.jsonl", report.JSONLines(thinRows(filter(src.sockets, func(r report.SocketRow) bool { return probed(r.Condition, r.Run) }),
		func(r report.SocketRow) (string, int, float64) { return r.Condition, r.Run, r.TMs })))
	write("resources.jsonl", report.JSONLines(thinRows(filter(src.resources, func(r report.ResourceRow) bool { return probed(r.Condition, r.Run) }),
		func(r report.ResourceRow) (string, int, float64) { return r.Condition, r.Run, r.TMs })))
	write("tempfiles.jsonl", report.JSONLines(thinRows(filter(src.tempfiles, func(r report.TempFileRow) bool { return keep(r.Condition, r.Run) }),
		func(r report.TempFileRow) (string, int, float64) { return r.Condition, r.Run, r.TMs })))
	write("throughput.json", report.JSON(srcB.throughput))
	write("test.json", testJSON(runs, claimsA, srcB.throughput, claimsB))
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

// testJSON is a `go test -json` stream of TestArticleA for runs and
// claimsA, and of TestArticleB for rows and claimsB: a run passes when
// valid, a row without failed requests, a claim by its verdict.
func testJSON(runs []report.Run, claimsA []report.Claim, rows []report.Throughput, claimsB []report.Claim) report.Reporter {
	return func(w io.Writer) error {
		at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		enc := json.NewEncoder(w)
		ev := func(action, test, output string, elapsed float64) {
			at = at.Add(time.Millisecond)
			e := map[string]any{"Time": at.Format(time.RFC3339Nano), "Action": action, "Package": "wsgilab/bench"}
			if test != "" {
				e["Test"] = test
			}
			if output != "" {
				e["Output"] = output
			}
			if action == "pass" || action == "fail" || action == "skip" {
				e["Elapsed"] = elapsed
			}
			_ = enc.Encode(e)
		}
		verdict := func(ok bool) string {
			if ok {
				return "pass"
			}
			return "fail"
		}
		failed := false
		ev("start", "", "", 0)
		ev("run", "TestArticleA", "", 0)
		total := 0.0
		for _, id := range fixtureConditions {
			name := "TestArticleA/" + id
			ev("run", name, "", 0)
			sub, ok := 0.0, true
			for _, r := range runs {
				if r.Condition != id {
					continue
				}
				rn := fmt.Sprintf("%s/run%d", name, r.Run)
				ev("run", rn, "=== RUN   "+rn+"\n", 0)
				if !r.Valid {
					ev("output", rn, fmt.Sprintf("    article_a_test.go:51: %s run %d is invalid: %s\n", id, r.Run, r.Invalid), 0)
				}
				ev(verdict(r.Valid), rn, "", r.WallS)
				sub += r.WallS
				ok = ok && r.Valid
			}
			ev(verdict(ok), name, "", sub)
			total += sub
			failed = failed || !ok
		}
		claimTests := func(top, file string, claims []report.Claim) bool {
			ev("run", top+"/claims", "", 0)
			failed := false
			for _, c := range claims {
				name := top + "/claims/" + c.ID
				ev("run", name, "=== RUN   "+name+"\n", 0)
				switch {
				case !c.Evaluated:
					ev("output", name, "    "+file+": not evaluated: "+c.Note+"\n", 0)
					ev("skip", name, "", 0)
				case !c.Holds:
					ev("output", name, fmt.Sprintf("    %s: %s: measured %.4g %s, threshold %s %s\n",
						file, c.Text, c.Measured, c.Unit, c.Threshold, c.Unit), 0)
					ev("fail", name, "", 0)
					failed = true
				default:
					ev("pass", name, "", 0)
				}
			}
			ev(verdict(!failed), top+"/claims", "", 0)
			return failed
		}
		failedA := claimTests("TestArticleA", "article_a_test.go:62", claimsA) || failed
		ev(verdict(!failedA), "TestArticleA", "", total)

		ev("run", "TestArticleB", "", 0)
		failedB, totalB := false, 0.0
		var ids []string
		for _, r := range rows {
			if !slices.Contains(ids, r.ID) {
				ids = append(ids, r.ID)
			}
		}
		for _, id := range ids {
			name := "TestArticleB/" + id
			ev("run", name, "", 0)
			ok, sub := true, 0.0
			for _, r := range rows {
				if r.ID != id {
					continue
				}
				gn := name + "/" + r.Generator
				ev("run", gn, "=== RUN   "+gn+"\n", 0)
				if r.Failed > 0 {
					ev("output", gn, fmt.Sprintf("    article_b_test.go:103: %s with %s: %d failed requests %v\n",
						id, r.Generator, r.Failed, r.FailedBy), 0)
				}
				ev(verdict(r.Failed == 0), gn, "", r.TotalS)
				ok, sub = ok && r.Failed == 0, sub+r.TotalS
			}
			ev(verdict(ok), name, "", sub)
			failedB, totalB = failedB || !ok, totalB+sub
		}
		failedB = claimTests("TestArticleB", "article_b_test.go:116", claimsB) || failedB
		ev(verdict(!failedB), "TestArticleB", "", totalB)
		failed = failedA || failedB
		total += totalB
		ev(verdict(!failed), "", "", total+1)
		return nil
	}
}
