package htmlreport

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"wsgilab/bench/internal/podspec"
	"wsgilab/bench/internal/report"
)

// page is everything the template prints; built from the files alone.
type page struct {
	Header          header
	Answer          answerView
	Claims          claimsView
	Conditions      []conditionRow
	ConditionsNote  string // instead of the table
	P95             chartsView
	Timelines       chartsView
	WriteCompletion chartsView
	Sockets         chartsView
	Tempfiles       chartsView
	Resources       chartsView
	Waits           waitsView
	Sweep           sweepView
	Matrix          matrixView
	Exhaustion      exhaustionView
	Scale           []scaleView
	Limits          []limitRow
	Stacks          []stackView
	ArticleB        articleBView
	Env             envView
	Tests           testsView
}

// notMeasured is what a section says when its file is absent; notA when
// the directory has no article A series at all (no conditions.json).
const (
	notMeasured = "not measured in this run"
	notA        = "article A was not measured in this run"
)

type header struct {
	Series  []kv // empty without series.json
	Commit  string
	Started string
}

type kv struct{ K, V string }

// chartsView is a section of charts, or the reason it has none.
type chartsView struct {
	Missing string
	// Wide lays the figures out one per row.
	Wide    bool
	Note    string
	Figures []figure
}

func build(f *files) page {
	p := page{
		Header:          buildHeader(f),
		Claims:          buildClaims(f.claims, f.env),
		P95:             p95Charts(f.conditions),
		Timelines:       timelines(f),
		WriteCompletion: writeCompletion(f.conditions),
		Sockets:         socketCharts(f),
		Tempfiles:       tempfileCharts(f),
		Resources:       resourceCharts(f),
		Waits:           buildWaits(f),
		Sweep:           buildSweep(f),
		Matrix:          buildMatrix(f.matrix),
		Exhaustion:      buildExhaustion(f.exhaustion),
		Scale:           buildScale(f.matrix),
		Limits:          buildLimits(f.matrix),
		Stacks:          buildStacks(f.stacks, f.env),
		ArticleB:        buildArticleB(f.throughput),
		Env:             buildEnv(f),
		Tests:           buildTests(f.tests),
	}
	p.Answer = buildAnswer(f, p.Claims, p.Matrix.Overview)
	for _, c := range f.conditions {
		p.Conditions = append(p.Conditions, conditionRowOf(c))
	}
	switch {
	case f.conditions == nil:
		p.ConditionsNote = notA
	case len(f.conditions) == 0:
		p.ConditionsNote = "conditions.json holds no condition"
	}
	return p
}

func buildHeader(f *files) header {
	var h header
	if s := f.series; s != nil {
		h.Started = s.StartedAt.UTC().Format(time.RFC3339)
		h.Series = []kv{
			{"runs", fmt.Sprintf("%d (%d valid)", s.Runs, s.RunsValid)},
			{"wall time", seconds(s.WallS)},
			{"load windows", seconds(s.WindowsS)},
			{"overhead", num(s.Overhead) + "×"},
			{"worst schedule lag", num(s.LagMaxMs) + " ms (p99 " + num(s.LagP99MaxMs) + " ms)"},
		}
	}
	if e := f.env; e != nil {
		h.Commit = e.GitCommit
		if e.GitDirty {
			h.Commit += " (uncommitted changes)"
		}
		if h.Started == "" && !e.GeneratedAt.IsZero() {
			h.Started = e.GeneratedAt.UTC().Format(time.RFC3339)
		}
	}
	return h
}

// Claims.

type claimsView struct {
	Missing string
	// Busy, when set, says the series ran on a busy machine; Aborts, that
	// the safety stop discarded runs; Resumed, that runs came from an
	// interrupted series' journal; Merged, which machines a merged series'
	// shards ran on, and Mismatch how they differed.
	Busy, Aborts, Resumed, Merged, Mismatch string
	// Discards are the discarded runs, one row each; TooBusy names the
	// units the series gave up on.
	Discards []discardView
	TooBusy  string
	// Groups are the article claims, then the harness checks.
	Groups []claimGroup
	Holds  int
	// Fails counts the verdicts that failed or lack data, Expected those
	// that failed as they were meant to (an example stack's), NotEval
	// those not run in this series.
	Fails    int
	Expected int
	NotEval  int
}

// claimGroup is one kind's verdicts: those evaluated in Rows, those not
// run in this series apart (the page folds them away).
type claimGroup struct {
	Title, Intro string
	Rows, NotRun []claimRow
}

type claimRow struct {
	ID, Text, Verdict, Class, Measured, Threshold, Unit, Needs, Note string
}

// claimKinds are the verdict kinds in the order the page shows them.
var claimKinds = []struct{ kind, title, intro string }{
	{"article", "Article claims", "What the articles state or infer, checked on our measurements."},
	{"lab", "Lab findings", "What the lab finds beyond the articles: the size × rate sweep, the buffer model's predictions, article A under the article-host TCP profile, the resilience matrix."},
	{"harness", "Harness checks", "Checks of the lab's own instruments: the client's pacing, the byte accounting between client and sockets, and our load generator against ab. They are asserted too, but say nothing about the servers."},
}

func buildClaims(cs []report.Claim, env *report.Environment) claimsView {
	if cs == nil {
		return claimsView{Missing: notMeasured}
	}
	var v claimsView
	if env != nil && env.Machine.Busy != "" {
		v.Busy = "This series ran on a busy machine: " + env.Machine.Busy + ". Its figures may be disturbed."
	}
	if env != nil && len(env.Safety.Aborts) > 0 {
		v.Aborts = fmt.Sprintf("The series discarded %d run(s) and ran each again once the host was calm: "+
			"the safety stop tripped during it, or its own figures crossed the redo rule (%s). No discarded run is judged; its raw record is kept.",
			len(env.Safety.Aborts), redoLine(env.Safety))
		for _, a := range env.Safety.Aborts {
			v.Discards = append(v.Discards, discardRow(a))
		}
	}
	if env != nil && len(env.Safety.TooBusy) > 0 {
		var units []string
		for _, tb := range env.Safety.TooBusy {
			units = append(units, fmt.Sprintf("%s (%s, %d attempts; the last %s)", tb.Condition, tb.Unit, tb.Attempts, tb.Last))
		}
		v.TooBusy = "The machine was too busy to judge: " + strings.Join(units, "; ") + ". Every verdict that reads these says so instead of judging."
	}
	if env != nil && env.Resume.Resumed {
		v.Resumed = fmt.Sprintf("This series resumed an interrupted one: %d completed unit(s) came from its journal (%s).",
			len(env.Resume.Kept), strings.Join(env.Resume.Kept, ", "))
	}
	if env != nil && env.Merged != nil {
		var shards []string
		for _, o := range env.Merged.Shards {
			shards = append(shards, fmt.Sprintf("%s on %s (%s, %s × %d, kernel %s, cgroup v%d, CFS periods %v µs)",
				o.Shard, cmp.Or(o.EngineHost, "?"), o.Engine, o.CPUModel, o.CPUs, o.Kernel, o.CgroupVersion, o.CPUPeriodsMicros))
		}
		v.Merged = fmt.Sprintf("This series was merged from %d shard(s), its verdicts judged on the merged data: %s.",
			len(env.Merged.Shards), strings.Join(shards, "; "))
		if len(env.Merged.Mismatches) > 0 {
			v.Mismatch = "The shards' machines differ, so their figures may not compare: " + strings.Join(env.Merged.Mismatches, "; ") + "."
		}
	}
	groups := map[string]*claimGroup{}
	for _, k := range claimKinds {
		groups[k.kind] = &claimGroup{Title: k.title, Intro: k.intro}
	}
	for _, c := range cs {
		r := claimRow{ID: c.ID, Text: c.Text, Threshold: c.Threshold, Unit: c.Unit,
			Needs: strings.Join(c.Needs, ", "), Note: c.Note, Measured: "–"}
		switch {
		case c.Status == report.StatusNotRun:
			r.Verdict, r.Class = "not run", "skip"
			v.NotEval++
		case c.Status == report.StatusMissing:
			r.Verdict, r.Class = "missing data", "fail"
			v.Fails++
		case c.Status == report.StatusTooBusy:
			r.Verdict, r.Class = "machine too busy", "fail"
			v.Fails++
		case c.Status == report.StatusHolds:
			r.Verdict, r.Class, r.Measured = "holds", "pass", num(c.Measured)
			v.Holds++
		case c.AsExpected():
			r.Verdict, r.Class, r.Measured = "fails, as this example is meant to", "expected", num(c.Measured)
			v.Expected++
		default:
			r.Verdict, r.Class, r.Measured = "fails", "fail", num(c.Measured)
			v.Fails++
		}
		g := groups[c.Kind]
		if g == nil {
			g = &claimGroup{Title: "Kind " + c.Kind}
			groups[c.Kind] = g
		}
		if c.Status == report.StatusNotRun {
			g.NotRun = append(g.NotRun, r)
		} else {
			g.Rows = append(g.Rows, r)
		}
	}
	for _, k := range claimKinds {
		if g := groups[k.kind]; len(g.Rows)+len(g.NotRun) > 0 {
			v.Groups = append(v.Groups, *g)
		}
		delete(groups, k.kind)
	}
	for _, k := range slices.Sorted(maps.Keys(groups)) {
		v.Groups = append(v.Groups, *groups[k])
	}
	return v
}

// Article A's table.

type conditionRow struct {
	ID, Runs, P95, P95Range, ArticleP95, ArticleRange, Ratio string
	P50, Max                                                 string
	Write, ArticleWrite, Completion, ArticleCompletion       string
	Requests, Downloads                                      string
	Invalid                                                  bool
}

func conditionRowOf(c report.Condition) conditionRow {
	r := conditionRow{ID: c.ID, Runs: fmt.Sprintf("%d / %d", c.RunsValid, c.RunsTotal),
		P95: "–", P95Range: "–", P50: "–", Max: "–", Ratio: "–",
		ArticleP95: optNum(c.ArticleP95Ms), ArticleRange: "–",
		Write: "–", Completion: "–", ArticleWrite: optNum(c.ArticleWriteS), ArticleCompletion: optNum(c.ArticleCompletionS),
		Requests:  fmt.Sprintf("%d / %d", c.RequestsOK, c.RequestsTotal),
		Downloads: fmt.Sprintf("%d / %d", c.DownloadsComplete, c.DownloadsTotal),
		Invalid:   c.RunsValid < c.RunsTotal || c.RunsValid == 0}
	if c.RunsValid > 0 {
		r.P95, r.P95Range, r.P50, r.Max = num(c.P95Ms), rangeText(c.P95MsMin, c.P95MsMax), num(c.P50Ms), num(c.MaxMs)
		if c.ArticleP95Ms > 0 {
			r.Ratio = num(c.P95Ms/c.ArticleP95Ms) + "×"
		}
		if downloadsPerRun(c) > 0 {
			r.Write, r.Completion = num(c.WriteS), num(c.CompletionS)
		}
	}
	if len(c.ArticleP95MsRange) == 2 {
		r.ArticleRange = rangeText(c.ArticleP95MsRange[0], c.ArticleP95MsRange[1])
	}
	return r
}

// downloadsPerRun is how many slow downloads each run of c started.
func downloadsPerRun(c report.Condition) int {
	if c.RunsTotal == 0 {
		return 0
	}
	return c.DownloadsTotal / c.RunsTotal
}

// twoDownloads are the conditions with (at least) two downloads per run.
func twoDownloads(cs []report.Condition) []report.Condition {
	var out []report.Condition
	for _, c := range cs {
		if downloadsPerRun(c) >= 2 {
			out = append(out, c)
		}
	}
	return out
}

// firstRun is the lowest run number among rows of condition id.
func firstRun[T any](rows []T, id string, key func(T) (string, int)) (int, bool) {
	run, ok := 0, false
	for _, r := range rows {
		c, k := key(r)
		if c == id && (!ok || k < run) {
			run, ok = k, true
		}
	}
	return run, ok
}

// Waits.

type waitsView struct {
	Missing string
	Chart   figure
	Rows    []waitRow
}

type waitRow struct {
	ID, Runs, Most, Least, Proxy, PerRun string
}

type waitShares struct {
	id                 string
	runs               int
	most, least, proxy float64
	hasProxy           bool
	perRun             []string
}

// waitsOf is, per condition whose summary has them, the medians over valid
// runs of the send shares of the app's most and least blocked worker and
// of NGINX's most blocked worker, as conditions.json summarized them, with
// each run's shares for the table.
func waitsOf(f *files) []waitShares {
	var out []waitShares
	for _, c := range f.conditions {
		if c.AppWorkerSendShareMax == nil || c.AppWorkerSendShareMin == nil {
			continue
		}
		w := waitShares{id: c.ID, runs: len(c.SendShares), most: *c.AppWorkerSendShareMax, least: *c.AppWorkerSendShareMin}
		if c.ProxyWorkerSendShareMax != nil {
			w.proxy, w.hasProxy = *c.ProxyWorkerSendShareMax, true
		}
		for _, r := range c.SendShares {
			s := fmt.Sprintf("r%d: %s", r.Run, joinPct(r.App))
			if len(r.Proxy) > 0 {
				s += " (nginx " + joinPct(r.Proxy) + ")"
			}
			w.perRun = append(w.perRun, s)
		}
		out = append(out, w)
	}
	return out
}

func joinPct(shares []float64) string {
	s := slices.Clone(shares)
	slices.SortFunc(s, func(a, b float64) int { return cmp.Compare(b, a) })
	parts := make([]string, len(s))
	for i, v := range s {
		parts[i] = strings.TrimSuffix(pct(v), " %")
	}
	return strings.Join(parts, "/") + " %"
}

func buildWaits(f *files) waitsView {
	if f.conditions == nil {
		return waitsView{Missing: notMeasured}
	}
	ws := waitsOf(f)
	if len(ws) == 0 {
		return waitsView{Missing: "no condition with the sampler's worker states in conditions.json"}
	}
	v := waitsView{Chart: waitsChart(ws)}
	for _, w := range ws {
		r := waitRow{ID: w.id, Runs: fmt.Sprint(w.runs), Most: pct(w.most),
			Least: pct(w.least), Proxy: "–", PerRun: strings.Join(w.perRun, "; ")}
		if w.hasProxy {
			r.Proxy = pct(w.proxy)
		}
		v.Rows = append(v.Rows, r)
	}
	return v
}

// Article B.

type articleBView struct {
	Missing string
	Chart   figure
	Rows    []throughputRow
}

type throughputRow struct {
	ID, Server, Generator, Blocking, NC, Total, ReqPerS, Failed, P50, P95, P99, CPU, Article, Note string
	ServerCPU, ServerThrottled                                                                     string
}

func buildArticleB(ts []report.Throughput) articleBView {
	if ts == nil {
		return articleBView{Missing: notMeasured}
	}
	if len(ts) == 0 {
		return articleBView{Missing: "throughput.json holds no condition"}
	}
	v := articleBView{Chart: throughputChart(ts)}
	for _, t := range ts {
		failed := fmt.Sprint(t.Failed)
		if len(t.FailedBy) > 0 {
			var parts []string
			for _, k := range slices.Sorted(maps.Keys(t.FailedBy)) {
				parts = append(parts, fmt.Sprintf("%s %d", k, t.FailedBy[k]))
			}
			failed += " (" + strings.Join(parts, ", ") + ")"
		}
		v.Rows = append(v.Rows, throughputRow{ID: t.ID, Server: t.Server, Generator: t.Generator,
			Blocking: fmt.Sprintf("%d ms", t.BlockingMs), NC: fmt.Sprintf("%d / %d", t.N, t.C),
			Total: num(t.TotalS), ReqPerS: num(t.ReqPerS), Failed: failed, P50: num(t.P50Ms),
			P95: num(t.P95Ms), P99: num(t.P99Ms), CPU: num(t.GeneratorCPUS) + " (" + pct(t.GeneratorBusy) + ")", Article: optNum(t.ArticleReqPerS),
			Note: t.ArticleNote, ServerCPU: num(t.ServerCPUPercent) + " %", ServerThrottled: pct(t.ServerThrottledShare)})
	}
	return v
}

// Environment.

type envView struct {
	Missing     string
	Groups      []envGroup
	Inspections []inspectionRow
	Sysctls     []kv
	Packages    []kv
}

type envGroup struct {
	Title string
	Rows  []kv
}

type inspectionRow struct {
	Role, Cgroup, CPU, Memory, Sysctls string
}

func buildEnv(f *files) envView {
	e := f.env
	if e == nil {
		return envView{Missing: notMeasured}
	}
	dirty := "no"
	if e.GitDirty {
		dirty = "yes"
	}
	limits := func(cpus float64, mem int64) string {
		return fmt.Sprintf("%s core, %s", num(cpus), mib(mem))
	}
	image := func(ref string, built bool, d time.Duration) string {
		how := "found"
		if built {
			how = "built"
		}
		return fmt.Sprintf("%s (%s in %s)", ref, how, seconds(d.Seconds()))
	}
	v := envView{Groups: []envGroup{
		{"Series", []kv{
			{"generated at", e.GeneratedAt.UTC().Format(time.RFC3339)},
			{"git commit", e.GitCommit}, {"uncommitted changes", dirty}, {"Go", e.GoVersion},
		}},
		{"Docker engine", []kv{
			{"server", e.Docker.ServerVersion}, {"API", e.Docker.APIVersion}, {"kernel", e.Docker.Kernel},
			{"OS", e.Docker.OS}, {"arch", e.Docker.Arch}, {"CPUs", fmt.Sprint(e.Docker.NCPU)},
			{"memory", size(e.Docker.MemTotal)}, {"storage driver", e.Docker.StorageDriver},
			{"cgroup driver", e.Docker.CgroupDriver},
		}},
		{"Images and versions", []kv{
			{"base image", image(e.BaseImage.Ref, e.BaseImage.Built, e.BaseImage.Duration)},
			{"lab image", image(e.LabImage.Ref, e.LabImage.Built, e.LabImage.Duration)},
			{"Python", e.Versions.Python}, {"Gunicorn", e.Versions.Gunicorn},
			{"Gunicorn, beside it", releases(e.Versions.GunicornReleases)}, {"NGINX", e.Versions.Nginx},
			{"uWSGI", e.Versions.UWSGI}, {"Django", e.Versions.Django}, {"gevent", e.Versions.Gevent},
			{"Uvicorn", e.Versions.Uvicorn}, {"uvloop", e.Versions.Uvloop}, {"httptools", e.Versions.Httptools},
			{"front doors", frontDoors(e.Versions.FrontDoors)},
			{"CPU model", e.Versions.CPUModel},
		}},
		{"Machine, before the series", []kv{
			{"CPU", fmt.Sprintf("%s × %d", e.Machine.CPUModel, e.Machine.CPUs)},
			{"busy (other programs)", pct(e.Machine.BusyShare)}, {"stolen by the hypervisor", pct(e.Machine.StealShare)},
			{"load average (1 min)", num(e.Machine.LoadAvg1)},
			{"one core, SHA-256", num(e.Machine.CalibrationMBps) + " MB/s"},
			{"verdict", cmp.Or(e.Machine.Busy, "quiet")},
		}},
		{"Safety stop and resume", []kv{
			{"safety stop", safetyLine(e.Safety)},
			{"CPU outside the lab, max", pct(e.Safety.MaxShare)}, {"CPU outside the lab, mean", pct(e.Safety.MeanShare)},
			{"samples", fmt.Sprint(e.Safety.Samples)},
			{"redo rule", redoLine(e.Safety)},
			{"runs discarded", fmt.Sprint(len(e.Safety.Aborts))},
			{"units too busy to judge", fmt.Sprint(len(e.Safety.TooBusy))},
			{"units kept from a journal", fmt.Sprint(len(e.Resume.Kept))},
		}},
		{"Container hardening", hardeningRows(e.Hardening)},
		{"Default pod and limits", []kv{
			{"server", e.Pod.Server.ID}, {"command", strings.Join(e.Pod.Server.Cmd, " ")},
			{"CFS period", fmt.Sprintf("%s ms", num(float64(e.Pod.CPUPeriod)/1e6))},
			{"app", limits(e.Pod.App.CPUs, e.Pod.App.Memory)},
			{"proxy", limits(e.Pod.ProxyLimits.CPUs, e.Pod.ProxyLimits.Memory)},
			{"client", limits(e.Pod.Client.CPUs, e.Pod.Client.Memory)},
			{"net.ipv4.tcp_rmem", e.Pod.TCPRmem}, {"net.ipv4.tcp_wmem", e.Pod.TCPWmem},
			{"/proc sampler", fmt.Sprint(e.Pod.Sampler)},
		}},
	}}
	for _, role := range slices.Sorted(maps.Keys(e.Inspections)) {
		in := e.Inspections[role]
		r := inspectionRow{Role: role, Cgroup: fmt.Sprintf("v%d", in.Limits.CgroupVersion), CPU: "unlimited", Memory: "unlimited"}
		if in.Limits.CPUQuotaMicros >= 0 {
			r.CPU = fmt.Sprintf("%d / %d µs", in.Limits.CPUQuotaMicros, in.Limits.CPUPeriodMicros)
		}
		if in.Limits.MemoryBytes >= 0 {
			r.Memory = mib(in.Limits.MemoryBytes)
		}
		var s []string
		for _, k := range slices.Sorted(maps.Keys(in.Sysctls)) {
			s = append(s, k+" = "+in.Sysctls[k])
		}
		r.Sysctls = strings.Join(s, "; ")
		v.Inspections = append(v.Inspections, r)
	}
	// The sysctls each run read back: every distinct value, with how many
	// runs saw it.
	seen := map[string]map[string]int{}
	for _, r := range f.runs {
		for k, val := range r.Sysctls {
			if seen[k] == nil {
				seen[k] = map[string]int{}
			}
			seen[k][val]++
		}
	}
	for _, k := range slices.Sorted(maps.Keys(seen)) {
		var vals []string
		for _, val := range slices.Sorted(maps.Keys(seen[k])) {
			vals = append(vals, fmt.Sprintf("%s (%d runs)", val, seen[k][val]))
		}
		v.Sysctls = append(v.Sysctls, kv{k, strings.Join(vals, "; ")})
	}
	for _, k := range slices.Sorted(maps.Keys(e.Versions.Packages)) {
		v.Packages = append(v.Packages, kv{k, e.Versions.Packages[k]})
	}
	return v
}

// discardView is one discarded run as the page lists it.
type discardView struct {
	Unit, Attempt, Reason, Figures, Waited, Raw string
}

func discardRow(a report.Abort) discardView {
	d := discardView{Unit: a.Unit, Attempt: fmt.Sprint(a.Attempt), Waited: num(a.WaitedS) + " s", Raw: a.Raw,
		Reason: cmp.Or(a.Reason, report.AbortSafetyStop)}
	if d.Reason == report.AbortSafetyStop {
		d.Figures = fmt.Sprintf("CPU outside the lab peaked at %s (mean %s) from %s to %s", pct(a.PeakShare), pct(a.MeanShare),
			a.From.UTC().Format("15:04:05.0"), a.To.UTC().Format("15:04:05.0"))
		return d
	}
	var crossed []string
	for _, x := range a.Disturbances {
		crossed = append(crossed, x.String())
	}
	d.Figures = strings.Join(crossed, "; ")
	if f := a.Figures; f != nil {
		d.Figures += fmt.Sprintf(" (lag max %s ms, second %s ms, client throttled %s", num(f.LagMaxMs), num(f.LagSecondMs), pct(f.ClientThrottledShare))
		if cs := f.ClientStall; cs != nil {
			d.Figures += fmt.Sprintf(", reaching %s ms into /fast p95 %s ms", num(cs.P95ReachMs), num(cs.P95Ms))
		}
		if f.WallStepMs != 0 {
			d.Figures += fmt.Sprintf(", wall clock stepped %s ms", num(f.WallStepMs))
		}
		if f.Host != nil {
			d.Figures += fmt.Sprintf(", outside the lab max %s, held %s for %s s", pct(f.Host.MaxShare), pct(f.Host.HeldShare), num(f.Host.HeldWindowS))
		}
		d.Figures += ")"
	}
	return d
}

// redoLine states the redo rule a series ran under.
func redoLine(s report.Safety) string {
	r := s.Redo
	switch {
	case !s.Enabled:
		return "off, with the safety stop"
	case r == nil:
		return "none recorded (a series from before the rule)"
	}
	clock := ""
	if r.ClientStallReachMs > 0 {
		stalls := "its throttling reaches"
		if r.HiccupEveryMs > 0 {
			stalls = fmt.Sprintf("its throttling or the stalls its hiccup meter sees (every %s ms) reach", num(r.HiccupEveryMs))
		}
		clock = fmt.Sprintf(" or %s over %s ms (or %s of it) into /fast p95", stalls, num(r.ClientStallReachMs), pct(r.P95Share))
	}
	if r.WallStepMs > 0 {
		clock += fmt.Sprintf(", the wall clock steps over %s ms against the monotonic clock", num(r.WallStepMs))
	}
	grown := ""
	if r.P95Share > 0 {
		grown = fmt.Sprintf(" (%s of the run's /fast p95 when that is more, for the requests started once enough of them had taken %s ms)",
			pct(r.P95Share), num(r.LagSecondMs/r.P95Share))
	}
	second := ""
	if r.HiccupEveryMs > 0 {
		second = ", the second-worst only in a run without the client's hiccup meter"
	}
	return fmt.Sprintf("a run is disturbed when the prober's worst lag exceeds %s ms or its second-worst %s ms%s%s, the client is throttled in over %s of its CFS periods%s, "+
		"or the CPU outside the lab holds above %s for %s s; at most %d attempts",
		num(r.LagMaxMs), num(r.LagSecondMs), grown, second, pct(r.ClientThrottledShare), clock, pct(r.OutsideShare), num(r.OutsideWindowS), r.MaxAttempts)
}

func safetyLine(s report.Safety) string {
	if !s.Enabled {
		return "off"
	}
	return fmt.Sprintf("trips above %s of the host for %s s", pct(s.Threshold), num(s.WindowS))
}

// hardeningRows are one row per role: user, kept capabilities, tmpfs and
// pids limit (every role also has a read-only root and no-new-privileges).
func hardeningRows(h map[string]podspec.Hardening) []kv {
	var rows []kv
	for _, role := range slices.Sorted(maps.Keys(h)) {
		r := h[role]
		caps := "none"
		if len(r.CapAdd) > 0 {
			caps = strings.Join(r.CapAdd, ", ")
		}
		var tmpfs []string
		for _, p := range slices.Sorted(maps.Keys(r.Tmpfs)) {
			tmpfs = append(tmpfs, p+" ("+r.Tmpfs[p]+")")
		}
		rows = append(rows, kv{role, fmt.Sprintf("user %s; capabilities %s; tmpfs %s; pids %d",
			cmp.Or(r.User, "root"), caps, cmp.Or(strings.Join(tmpfs, ", "), "none"), r.PidsLimit)})
	}
	return rows
}

// releases are the Gunicorn releases the image holds beside the
// installed one, each with what it reports itself as when imported (the
// series refuses to start when the two differ, so they differ only in a
// hand-edited record): "20.1.0 (the version rows)".
func releases(m map[string]string) string {
	if len(m) == 0 {
		return ""
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if m[k] == k {
			parts = append(parts, k)
		} else {
			parts = append(parts, fmt.Sprintf("%s (imports as %s)", k, m[k]))
		}
	}
	return strings.Join(parts, ", ") + " (the version rows)"
}

// frontDoors lists each front door's own version, by kind: "apache
// 2.4.71 · caddy 2.6.2 · ...".
func frontDoors(m map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+" "+m[k])
	}
	return strings.Join(parts, " · ")
}
