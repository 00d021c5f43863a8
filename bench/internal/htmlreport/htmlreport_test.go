package htmlreport

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/html"

	"wsgilab/bench/internal/disturb"
	"wsgilab/bench/internal/report"
)

var update = flag.Bool("update", false, "rewrite golden files")

// fixtureDir is a small real report directory, trimmed from a real series
// (fixtures/report/README.md says how).
const fixtureDir = "../../../fixtures/report"

const golden = "testdata/report.golden.html"

// The fixture's conditions, and which of them have two downloads or NGINX
// buffering on.
var (
	fixtureConditions = []string{"direct-0dl", "direct-2dl", "nginx-on-2dl"}
	fixtureTwo        = []string{"direct-2dl", "nginx-on-2dl"}
	fixtureNginxOn    = []string{"nginx-on-2dl"}
)

var sectionIDs = []string{"claims", "article-a-table", "p95-chart", "timelines", "write-completion",
	"sockets", "tempfiles", "resources", "waits", "sweep", "exhaustion", "article-b", "environment", "tests"}

// fixtureCharts is every data-chart figure the fixture's page must have.
func fixtureCharts() []string {
	charts := []string{"p95", "write-completion", "waits", "throughput", "scale-read"}
	for _, c := range fixtureConditions {
		charts = append(charts, "timeline-"+c)
	}
	for _, c := range fixtureTwo {
		charts = append(charts, "sockets-"+c, "resources-"+c)
	}
	for _, c := range fixtureNginxOn {
		charts = append(charts, "tempfiles-"+c)
	}
	for _, p := range []string{"stock", "article-host"} {
		charts = append(charts, "sweep-direct-"+p, "sweep-nginx-off-"+p)
	}
	return charts
}

func render(t *testing.T, dir string) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, Render(dir, &buf))
	return buf.Bytes()
}

// copyFixture is a writable copy of the fixture directory.
// section is the page's <section id="id">, up to its end.
func section(t *testing.T, page, id string) string {
	t.Helper()
	i := strings.Index(page, `<section id="`+id+`">`)
	require.GreaterOrEqualf(t, i, 0, "no section %s", id)
	return page[i : i+strings.Index(page[i:], "</section>")]
}

func copyFixture(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS(fixtureDir)))
	return dir
}

func TestGolden(t *testing.T) {
	got := render(t, fixtureDir)
	if *update {
		require.NoError(t, os.WriteFile(golden, got, 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err, "run go test ./bench/internal/htmlreport -run TestGolden -update to create it")
	if !bytes.Equal(got, want) {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		for i := range min(len(gl), len(wl)) {
			if gl[i] != wl[i] {
				t.Fatalf("page differs from %s at line %d:\n got: %.300s\nwant: %.300s\n(rerun with -update if the change is intended)",
					golden, i+1, gl[i], wl[i])
			}
		}
		t.Fatalf("page differs from %s in length: %d lines, want %d (rerun with -update if intended)", golden, len(gl), len(wl))
	}
}

func TestRenderIsDeterministic(t *testing.T) {
	assert.Equal(t, string(render(t, fixtureDir)), string(render(t, fixtureDir)))
}

// node helpers over golang.org/x/net/html.

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func walk(n *html.Node, f func(*html.Node)) {
	f(n)
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		walk(c, f)
	}
}

func has(n *html.Node, tag string) bool {
	found := false
	walk(n, func(m *html.Node) { found = found || (m.Type == html.ElementNode && m.Data == tag) })
	return found
}

func text(n *html.Node) string {
	var b strings.Builder
	walk(n, func(m *html.Node) {
		if m.Type == html.TextNode {
			b.WriteString(m.Data)
		}
	})
	return b.String()
}

// structure is what checkPage looks at: the sections by id and the figures
// by data-chart name.
type structure struct {
	sections map[string]*html.Node
	figures  map[string]*html.Node
}

func parse(t *testing.T, page []byte) structure {
	t.Helper()
	doc, err := html.Parse(bytes.NewReader(page))
	require.NoError(t, err)
	s := structure{sections: map[string]*html.Node{}, figures: map[string]*html.Node{}}
	walk(doc, func(n *html.Node) {
		if n.Type != html.ElementNode {
			return
		}
		switch {
		case n.Data == "section" && attr(n, "id") != "":
			assert.Nil(t, s.sections[attr(n, "id")], "section id %q twice", attr(n, "id"))
			s.sections[attr(n, "id")] = n
		case n.Data == "figure":
			name := attr(n, "data-chart")
			assert.NotEmpty(t, name, "a figure without data-chart")
			assert.Nil(t, s.figures[name], "figure %q twice", name)
			s.figures[name] = n
		}
	})
	return s
}

// checkPage asserts every section and every expected chart, each with an
// <svg>, is on the page.
func checkPage(t *testing.T, page []byte, charts []string) {
	t.Helper()
	s := parse(t, page)
	for _, id := range sectionIDs {
		assert.Contains(t, s.sections, id, "section #%s", id)
	}
	for _, name := range charts {
		f := s.figures[name]
		if assert.NotNil(t, f, "figure data-chart=%q", name) {
			assert.True(t, has(f, "svg"), "figure %q has no <svg>: %s", name, text(f))
		}
	}
	assert.Len(t, s.figures, len(charts), "unexpected figures")
}

func TestPageStructure(t *testing.T) {
	checkPage(t, render(t, fixtureDir), fixtureCharts())
}

// TestPageIsOffline: nothing on the page may reach the network.
func TestPageIsOffline(t *testing.T) {
	page := string(render(t, fixtureDir))
	for _, bad := range []string{"<script", "<link", "<img", "<iframe", "src=", "@import", "url(", "@font-face"} {
		assert.NotContains(t, page, bad)
	}
	// The only URLs are SVG's namespace names, which are never fetched.
	rest := strings.NewReplacer(`xmlns="http://www.w3.org/2000/svg"`, "",
		`xmlns:xlink="http://www.w3.org/1999/xlink"`, "").Replace(page)
	assert.NotContains(t, rest, "http://")
	assert.NotContains(t, rest, "https://")
	assert.Less(t, len(page), 1<<20, "the fixture's page should be small")
}

func TestMalformedFileIsNamed(t *testing.T) {
	for _, tc := range []struct{ file, content, want string }{
		{"conditions.json", `[{"id": "direct-2dl",`, "conditions.json"},
		{"claims.json", `{"not": "a list"}`, "claims.json"},
		{"requests.jsonl", "{\"condition\":\"x\"}\nnot json\n", "requests.jsonl:2"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			dir := copyFixture(t)
			require.NoError(t, os.WriteFile(filepath.Join(dir, tc.file), []byte(tc.content), 0o644))
			var buf bytes.Buffer
			err := Render(dir, &buf)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.Zero(t, buf.Len(), "nothing is written on error")
		})
	}
}

func TestNotAReportDirectory(t *testing.T) {
	err := Render(t.TempDir(), &bytes.Buffer{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not a report directory")
	require.Error(t, Render(filepath.Join(t.TempDir(), "absent"), &bytes.Buffer{}))
}

// TestArticleBOnly: a series of article B alone has no conditions.json.
func TestArticleBOnly(t *testing.T) {
	dir := copyFixture(t)
	for _, name := range []string{"conditions.json", "runs.json", "requests.jsonl", "downloads.json", "series.json",
		"tempfiles.jsonl", "sweep.json"} {
		require.NoError(t, os.Remove(filepath.Join(dir, name)))
	}
	page := render(t, dir)
	s := parse(t, page)
	for _, id := range []string{"article-a-table", "p95-chart", "timelines", "write-completion", "sockets",
		"tempfiles", "resources"} {
		assert.Contains(t, text(s.sections[id]), "article A was not measured in this run", "section #%s", id)
	}
	assert.Contains(t, text(s.sections["waits"]), "not measured in this run")
	checkPage(t, page, []string{"throughput", "scale-read"})
}

func TestMissingOptionalFiles(t *testing.T) {
	dir := copyFixture(t)
	for _, name := range []string{"claims.json", "requests.jsonl", "sockets.jsonl", "tempfiles.jsonl",
		"resources.jsonl", "runs.json", "throughput.json", "environment.json", "test.json", "series.json", "downloads.json",
		"sweep.json"} {
		require.NoError(t, os.Remove(filepath.Join(dir, name)))
	}
	page := render(t, dir)
	s := parse(t, page)
	for _, id := range []string{"claims", "timelines", "sockets", "tempfiles", "resources", "sweep", "article-b", "environment"} {
		if assert.Contains(t, s.sections, id) {
			assert.Contains(t, text(s.sections[id]), "not measured in this run", "section #%s", id)
		}
	}
	assert.Contains(t, text(s.sections["tests"]), "no test.json")
	// What conditions.json alone gives stays: the waits come from its
	// summaries, not from runs.json.
	checkPage(t, page, []string{"p95", "write-completion", "waits", "scale-read"})
}

func TestOnlyThroughputMissing(t *testing.T) {
	dir := copyFixture(t)
	require.NoError(t, os.Remove(filepath.Join(dir, "throughput.json")))
	s := parse(t, render(t, dir))
	assert.Contains(t, text(s.sections["article-b"]), "not measured in this run")
	assert.NotContains(t, s.figures, "throughput")
	assert.Contains(t, s.figures, "p95")
}

func TestWriteIsRender(t *testing.T) {
	dir := copyFixture(t)
	require.NoError(t, Write(dir))
	got, err := os.ReadFile(filepath.Join(dir, FileName))
	require.NoError(t, err)
	assert.Equal(t, string(render(t, fixtureDir)), string(got))
	// A failed render keeps the previous page.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "runs.json"), []byte("[{"), 0o644))
	require.Error(t, Write(dir))
	kept, err := os.ReadFile(filepath.Join(dir, FileName))
	require.NoError(t, err)
	assert.Equal(t, string(got), string(kept))
}

func TestNiceLogAndTicks(t *testing.T) {
	lo, hi := niceLog(1.2, 3)
	assert.Equal(t, []float64{1, 5}, []float64{lo, hi})
	lo, hi = niceLog(0.9, 6340)
	assert.Equal(t, []float64{0.5, 10000}, []float64{lo, hi})
	var labels []string
	for _, tk := range (logTicks{}).Ticks(1, 5) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	assert.Equal(t, []string{"1", "2", "5"}, labels)
	labels = nil
	for _, tk := range (logTicks{}).Ticks(0.5, 10000) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	assert.Equal(t, []string{"1", "10", "100", "1000", "10000"}, labels)
}

func TestNum(t *testing.T) {
	for v, want := range map[float64]string{5965.496702: "5965", 428.44: "428.4", 13.523: "13.52",
		1.4523: "1.452", 0.055: "0.055", 0: "0", 8.0: "8", 2.5: "2.5"} {
		assert.Equal(t, want, num(v), "%v", v)
	}
}

func TestTestsView(t *testing.T) {
	ev := func(action, test, out string) testEvent {
		return testEvent{Action: action, Package: "p", Test: test, Output: out}
	}
	v := buildTests([]testEvent{
		ev("run", "TestA", ""), ev("run", "TestA/x", ""), ev("output", "TestA/x", "=== RUN   TestA/x\n"),
		ev("output", "TestA/x", "    a_test.go:3: boom\n"), ev("fail", "TestA/x", ""),
		ev("run", "TestA/y", ""), ev("skip", "TestA/y", ""), ev("run", "TestA/z", ""), ev("pass", "TestA/z", ""),
		ev("fail", "TestA", ""), ev("run", "TestB", ""), ev("pass", "TestB", ""),
		ev("run", "TestC", ""), ev("output", "TestC", "hanging\n"),
		{Action: "fail", Package: "p", Elapsed: 3},
	})
	assert.Equal(t, []packageRow{{"p", "fail", "3.00 s"}}, v.Packages)
	assert.Equal(t, []topRow{
		{Package: "p", Test: "TestA", Result: "fail", Elapsed: "0.00 s", Pass: 1, Fail: 1, Skip: 1},
		{Package: "p", Test: "TestB", Result: "pass", Elapsed: "0.00 s", Pass: 1},
		{Package: "p", Test: "TestC", Result: "unknown", Elapsed: "–", Fail: 1},
	}, v.Tops)
	assert.Equal(t, []testOutput{
		{"p", "TestA/x", "    a_test.go:3: boom"},
		{"p", "TestC", "no result in test.json (interrupted?)\nhanging"},
	}, v.Failing)
	assert.Equal(t, 2, v.Pass)
	assert.Equal(t, 2, v.Fail)
	assert.Equal(t, 1, v.Skip)
}

// A series run on a busy machine says so beside its verdicts.
func TestBusyMachineSaysSo(t *testing.T) {
	dir := copyFixture(t)
	s := parse(t, render(t, dir))
	assert.NotContains(t, text(s.sections["claims"]), "busy machine")

	editEnv(t, dir, func(env *report.Environment) {
		env.Machine.Busy = "other programs used 37 % of the CPU before the series (threshold 10 %)"
	})
	s = parse(t, render(t, dir))
	assert.Contains(t, text(s.sections["claims"]), "This series ran on a busy machine: other programs used 37 %")
}

// The environment names the Gunicorn releases the image holds beside the
// installed one, as each imports, so a version row's release is on the
// page with the series.
func TestGunicornReleasesOnPage(t *testing.T) {
	dir := copyFixture(t)
	s := parse(t, render(t, dir))
	assert.Contains(t, text(s.sections["environment"]), "Gunicorn, beside it20.1.0 (the version rows)")

	editEnv(t, dir, func(env *report.Environment) { env.Versions.GunicornReleases = map[string]string{"20.1.0": "23.0.0"} })
	s = parse(t, render(t, dir))
	assert.Contains(t, text(s.sections["environment"]), "20.1.0 (imports as 23.0.0) (the version rows)")
}

// Runs the safety stop or the redo rule discarded, units the machine was
// too busy for, and units a resumed series kept, are said beside the
// verdicts, each discard with its reason and figures.
func TestAbortsAndResumeSaySo(t *testing.T) {
	dir := copyFixture(t)
	s := parse(t, render(t, dir))
	assert.NotContains(t, text(s.sections["claims"]), "discarded")

	editEnv(t, dir, func(env *report.Environment) {
		env.Safety.Enabled = true
		env.Safety.Redo = &report.RedoRule{LagMaxMs: 25, LagSecondMs: 2, ClientThrottledShare: 0.1, OutsideShare: 0.4, OutsideWindowS: 0.75, MaxAttempts: 4}
		env.Safety.Aborts = []report.Abort{{Unit: "direct-2dl run 2", Attempt: 1, PeakShare: 0.97},
			{Unit: "direct-0dl run 1", Attempt: 1, Reason: report.AbortDisturbed, Raw: "raw/discarded/direct-0dl-run1-attempt1.json",
				Disturbances: []report.Disturbance{{Check: "lag-second", Measured: 3.5, Bound: 2, Unit: "ms"}},
				Figures:      &report.RunNoise{LagMaxMs: 23.5, LagSecondMs: 3.5, ClientThrottledShare: 0.01, Host: &report.HostNoise{MaxShare: 0.9, HeldShare: 0.6, HeldWindowS: 0.75}}}}
		env.Safety.TooBusy = []report.TooBusy{{Unit: "nginx-on-2dl run 3", Condition: "nginx-on-2dl", Attempts: 4, Last: "disturbed: lag 30 ms > 25"}}
		env.Resume = report.Resume{Resumed: true, Kept: []string{"a/direct-0dl-run1"}}
	})
	claims := text(parse(t, render(t, dir)).sections["claims"])
	assert.Contains(t, claims, "The series discarded 2 run(s) and ran each again once the host was calm")
	assert.Contains(t, claims, "the prober's worst lag exceeds 25 ms or its second-worst 2 ms")
	assert.Contains(t, claims, "direct-2dl run 21safety-stopCPU outside the lab peaked at 97.0 %")
	assert.Contains(t, claims, "direct-0dl run 11disturbedlag-second 3.5 ms > 2 (lag max 23.5 ms, second 3.5 ms, client throttled 1.0 %, outside the lab max 90.0 %, held 60.0 % for 0.75 s)")
	assert.Contains(t, claims, "raw/discarded/direct-0dl-run1-attempt1.json")
	assert.Contains(t, claims, "The machine was too busy to judge: nginx-on-2dl (nginx-on-2dl run 3, 4 attempts; the last disturbed: lag 30 ms > 25)")
	assert.Contains(t, claims, "This series resumed an interrupted one: 1 completed unit(s) came from its journal (a/direct-0dl-run1).")

	// Today's rule: the client meters its hiccups, and the second-worst
	// lag judges only a run without the meter.
	editEnv(t, dir, func(env *report.Environment) {
		rule := disturb.DefaultRule()
		env.Safety.Redo = &rule
	})
	claims = text(parse(t, render(t, dir)).sections["claims"])
	assert.Contains(t, claims, "had taken 100 ms), the second-worst only in a run without the client's hiccup meter, the client is throttled")
	assert.Contains(t, claims, "or its throttling or the stalls its hiccup meter sees (every 2 ms) reach over 5 ms (or 5.0 % of it) into /fast p95")
}

// A merged series names its shards' machines beside the verdicts, and
// any difference between them.
func TestMergedSaysWhere(t *testing.T) {
	dir := copyFixture(t)
	assert.NotContains(t, text(parse(t, render(t, dir)).sections["claims"]), "merged from")
	editEnv(t, dir, func(env *report.Environment) {
		env.Merged = &report.Merged{Shards: []report.Origin{
			{Shard: "0/2", EngineHost: "lab0", Engine: "docker 20.10.24", CPUModel: "AMD EPYC", CPUs: 2, Kernel: "6.18.0", CgroupVersion: 1, CPUPeriodsMicros: []int64{10000}},
			{Shard: "1/2", EngineHost: "lab1", Engine: "docker 20.10.24", CPUModel: "Intel Xeon", CPUs: 2, Kernel: "6.18.0", CgroupVersion: 1, CPUPeriodsMicros: []int64{10000}}},
			Mismatches: []string{"cpu_model: shard 0/2 (a) AMD EPYC, shard 1/2 (b) Intel Xeon"}}
	})
	claims := text(parse(t, render(t, dir)).sections["claims"])
	assert.Contains(t, claims, "This series was merged from 2 shard(s), its verdicts judged on the merged data: 0/2 on lab0 (docker 20.10.24, AMD EPYC × 2, kernel 6.18.0, cgroup v1, CFS periods [10000] µs); 1/2 on lab1")
	assert.Contains(t, claims, "The shards' machines differ, so their figures may not compare: cpu_model: shard 0/2 (a) AMD EPYC, shard 1/2 (b) Intel Xeon.")
}

// editEnv rewrites dir's environment.json through edit.
func editEnv(t *testing.T, dir string, edit func(*report.Environment)) {
	t.Helper()
	var env report.Environment
	b, err := os.ReadFile(filepath.Join(dir, "environment.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &env))
	edit(&env)
	require.NoError(t, report.WriteFile(dir, "environment.json", report.JSON(env)))
}
