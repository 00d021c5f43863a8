package verdict

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"wsgilab/bench/internal/report"
)

// Verdicts on the faults that cut slow clients part-way (engine.Faults:
// reset-mid-download, reset-mid-upload). Each reads the condition's Cut,
// the worst of its sound runs: a cut client is the fault's doing, so no
// run of such a cell is valid, and every one the lab measured whole is
// judged.

// cutMetric is a figure of a condition's Cut, over its sound runs.
func cutMetric(name string, f func(*report.Cut) (float64, error)) Metric {
	return Metric{Name: name, of: func(c report.Condition) (float64, error) {
		if c.RunsSound == 0 {
			return 0, errors.New("no sound run")
		}
		if c.Cut == nil {
			return 0, fmt.Errorf("no record of the cut (fault %q)", c.Fault)
		}
		return f(c.Cut)
	}}
}

// fdsLeaked is the descriptors role held at the end of the load over
// those before it, in the worst run.
func fdsLeaked(role string) Metric {
	return cutMetric(role+" descriptors left", func(c *report.Cut) (float64, error) {
		n, ok := c.FDsLeaked[role]
		if !ok {
			return 0, fmt.Errorf("no count of the %s's descriptors", role)
		}
		return float64(n), nil
	})
}

// The metrics of a cut.
var (
	// CutShare is the share of slow clients the fault ended where it
	// cuts, in the run with the fewest.
	CutShare = cutMetric("share of slow clients cut at the fault's limit", func(c *report.Cut) (float64, error) {
		if c.Clients == 0 {
			return 0, errors.New("no slow client")
		}
		return float64(c.AtCut) / float64(c.Clients), nil
	})
	// CutUnseen counts the slow clients whose cut the app's records do
	// not show: no record, or one that says the body was taken whole.
	CutUnseen = cutMetric("slow clients whose cut the app did not record", func(c *report.Cut) (float64, error) {
		return float64(c.Missing + c.Complete), nil
	})
	// CutNotWhole counts the slow clients whose body the app did not
	// record as taken whole: no record, or an incomplete one.
	CutNotWhole = cutMetric("slow clients whose body the app did not record whole", func(c *report.Cut) (float64, error) {
		return float64(c.Missing + c.Incomplete), nil
	})
	// CutRecords counts the app's records of the slow clients.
	CutRecords = cutMetric("the app's records of the slow clients", func(c *report.Cut) (float64, error) {
		return float64(c.Records), nil
	})
	// FreedAfterCut is how long after the last cut the app's last record
	// of a slow client ended, seconds.
	FreedAfterCut = cutMetric("time from the cut to the app's last record", func(c *report.Cut) (float64, error) {
		if c.FreedAfterCutS == nil {
			return 0, errors.New("no record of a slow client in the app")
		}
		return *c.FreedAfterCutS, nil
	})
	// NextFailed counts the /fast requests after the cut not served.
	NextFailed = cutMetric("/fast requests after the cut not served", func(c *report.Cut) (float64, error) {
		if c.FastAfter == 0 {
			return 0, errors.New("no /fast request after the cut")
		}
		return float64(c.FastAfter - c.FastAfterOK), nil
	})
	// NextP95 is the p95 of the /fast requests after the cut, ms.
	NextP95 = cutMetric("p95 of /fast after the cut", func(c *report.Cut) (float64, error) {
		if c.FastAfter == 0 {
			return 0, errors.New("no /fast request after the cut")
		}
		return c.FastAfterP95Ms, nil
	})
	AppFDsLeaked   = fdsLeaked("app")
	ProxyFDsLeaked = fdsLeaked("proxy")
	// TempFilesLeft is how many temp files NGINX held at the end.
	TempFilesLeft = cutMetric("NGINX temp files left open", func(c *report.Cut) (float64, error) {
		if c.TempFilesLeft == nil {
			return 0, errors.New("no sample of NGINX's temp files")
		}
		return float64(*c.TempFilesLeft), nil
	})
)

// What the app's records must say of a cut (CutRule.Records).
const (
	// CutSeen: the app recorded each slow client's body as not taken (or
	// read) whole: its server saw the cut.
	CutSeen = "seen"
	// CutTakenWhole: the app recorded each body as taken whole: a front
	// door took it before the cut came.
	CutTakenWhole = "taken-whole"
	// CutKeptFromApp: the app has no record: a front door that reads a
	// request body whole before forwarding it never forwarded a cut one.
	CutKeptFromApp = "kept-from-app"
)

// CutRule is what a cut column's cells must show on some paths.
type CutRule struct {
	Column string
	// Paths pick the cells; nil is every path.
	Paths []string
	// Records is what the app's records say (CutSeen, CutTakenWhole,
	// CutKeptFromApp), and Why why.
	Records, Why string
}

// CutRules are the cut columns' rules, the first that matches a cell
// applying. Measured at 3 runs of each cell (reports/measurements.md).
var CutRules = []CutRule{
	{Column: "reset-mid-download", Paths: []string{"nginx-on"}, Records: CutTakenWhole,
		Why: "NGINX buffering on takes each 16 MiB body from the app in tens of milliseconds, long before the cut at 4 MiB, and spools it: the cut is NGINX's to clean up"},
	{Column: "reset-mid-download", Records: CutSeen,
		Why: "the body leaves the app as the reader reads it, so the cut reaches the app's write at once"},
	{Column: "reset-mid-upload", Paths: []string{"nginx-on"}, Records: CutKeptFromApp,
		Why: "NGINX's request buffering (on by default) reads a body whole before it forwards it, and never forwards a cut one"},
	{Column: "reset-mid-upload", Records: CutSeen,
		Why: "the body reaches the app's read as the client sends it, so the cut ends that read"},
}

// CutRuleFor is the rule of a cut column's cell.
func CutRuleFor(col, path string) (CutRule, bool) {
	for _, r := range CutRules {
		if r.Column == col && (r.Paths == nil || slices.Contains(r.Paths, path)) {
			return r, true
		}
	}
	return CutRule{}, false
}

// FreedWithinS bounds how long after the cut the app's last record of a
// cut slow client may end, where its server sees the cut
// (reports/measurements.md has the spread).
const FreedWithinS = 0.5

// NextHeldMs bounds the p95 of /fast after a cut: a worker the cut left
// held would make it seconds (sync's two workers held by the two slow
// clients made /fast's p95 1.38 to 1.41 s before the cut), and the
// slowest cell measured 24.6 ms (uvicorn behind NGINX with request
// buffering off, 24.6 ms in one run of 6; reports/measurements.md).
const NextHeldMs = 100.0

// CutVerdicts are a cut column's verdicts on the cell measured by
// condition id, row on path (proxied: behind a front door, which spills
// when it buffers): the fault cut every slow client where it cuts (a
// harness check); the app's records say what the rule says, and where it
// saw the cut, its worker was freed within FreedWithinS; every /fast
// request after the cut was served, its p95 under NextHeldMs; and
// no descriptor of the app's or the proxy's, nor a temp file of
// NGINX's, was left behind.
func CutVerdicts(col, row, path, id string, proxied bool) []Verdict {
	r, ok := CutRuleFor(col, path)
	if !ok {
		panic("verdict: no CutRule for " + col + " on " + path)
	}
	base := strings.TrimPrefix(id, "matrix-")
	where := fmt.Sprintf("%s %s under %s", row, pathText(path), col)
	vs := []Verdict{
		{ID: base + "-cut", Kind: Harness, Unit: "share", Check: Between(id, CutShare, 1, 1),
			Text: where + ": Toxiproxy's limit_data ended every slow client at its cut (4 MiB, within 256 KiB), the fault the cell is about"},
	}
	switch r.Records {
	case CutSeen:
		vs = append(vs,
			Verdict{ID: base + "-seen", Kind: Lab, Unit: "clients", Check: Zero(id, CutUnseen),
				Text: where + ": the app's record of every slow client says its body was not taken whole: " + r.Why},
			Verdict{ID: base + "-freed", Kind: Lab, Unit: "s", Check: Below(id, FreedAfterCut, FreedWithinS),
				Text: fmt.Sprintf("%s: the app's last record of a cut slow client ends within %g s of the cut: its worker is freed", where, FreedWithinS)})
	case CutTakenWhole:
		vs = append(vs, Verdict{ID: base + "-taken-whole", Kind: Lab, Unit: "clients", Check: Zero(id, CutNotWhole),
			Text: where + ": the app's record of every slow client says its body was taken whole: " + r.Why})
	case CutKeptFromApp:
		vs = append(vs, Verdict{ID: base + "-kept-from-app", Kind: Lab, Unit: "records", Check: Zero(id, CutRecords),
			Text: where + ": the app has no record of any slow client: " + r.Why})
	default:
		panic("verdict: CutRule records " + r.Records)
	}
	return append(vs, cutAftermath(base, where, id, "/fast", NextHeldMs, "nothing the cut left holds a worker, which would make it seconds", proxied, proxied && col == "reset-mid-download")...)
}

// cutAftermath are what a cut must leave, on the cell measured by
// condition id (its verdicts' ids base-...): every request to the fast
// path (fast) after the cut served, their p95 under nextMs (nextWhy says
// why that line); no more descriptors of the app's, nor, when proxied, of
// the proxy's, at the end of the load than before it; and, when temps, no
// temp file of NGINX's.
func cutAftermath(base, where, id, fast string, nextMs float64, nextWhy string, proxied, temps bool) []Verdict {
	vs := []Verdict{
		{ID: base + "-next-served", Kind: Lab, Unit: "requests", Check: Zero(id, NextFailed),
			Text: fmt.Sprintf("%s: every %s request started %s after the cut is served", where, fast, "250 ms or more")},
		{ID: base + "-next-not-held", Kind: Lab, Unit: "ms", Check: Below(id, NextP95, nextMs),
			Text: fmt.Sprintf("%s: %s after the cut has a p95 under %g ms: %s", where, fast, nextMs, nextWhy)},
		{ID: base + "-no-fd-leak", Kind: Lab, Unit: "fds", Check: Below(id, AppFDsLeaked, 0.5),
			Text: where + ": the app holds no more sockets or files at the end of the load (the fewest over its last second) than before it (its quiet count)"}}
	if proxied {
		vs = append(vs, Verdict{ID: base + "-no-proxy-fd-leak", Kind: Lab, Unit: "fds", Check: Below(id, ProxyFDsLeaked, 0.5),
			Text: where + ": the front door holds no more descriptors at the end of the load than before it (a temp file or a spooled request body it kept open is one)"})
	}
	// The sampler watches NGINX's proxy_temp_path, where responses spill;
	// a request body spools to client_body_temp_path, which the proxy's
	// descriptors above count.
	if temps {
		vs = append(vs, Verdict{ID: base + "-no-temp-left", Kind: Lab, Unit: "files", Check: Zero(id, TempFilesLeft),
			Text: where + ": NGINX holds no temp file of a response at the end of the load"})
	}
	return vs
}

// StackCutBase is the start of the ids of the stack's reset verdicts
// under col: StackCutBase(...)+"-cut", "-next-served", ….
func StackCutBase(stack, col string) string { return fmt.Sprintf("stack-%s-%s", stack, col) }

// StackCutVerdicts are a stack's reset verdicts (a stack file's
// requires.resets) on the step measured by condition id, clients of a
// team's app cut under col: the fault cut every one where it cuts (a
// harness check, as the matrix's), and what the cut left
// (cutAftermath), the fast path after it bounded by the stack's own
// boundMs. A team's app keeps no write records, so whether its worker
// was freed is read from what it holds: a worker still held by a cut
// client holds its socket, a descriptor over the count before the load.
// fast is the stack's fast path; proxied: behind a front door; temps:
// NGINX from the lab's template, whose temp path the sampler watches.
func StackCutVerdicts(stack, col, id, fast string, clients int, boundMs float64, proxied, temps bool) []Verdict {
	base := StackCutBase(stack, col)
	where := fmt.Sprintf("%s under %s (%d clients cut at once)", stack, col, clients)
	return append([]Verdict{
		{ID: base + "-cut", Kind: Harness, Unit: "share", Check: Between(id, CutShare, 1, 1),
			Text: where + ": Toxiproxy's limit_data ended every client at its cut (4 MiB, within 256 KiB), the fault the step is about"},
	}, cutAftermath(base, where, id, fast, boundMs, "the stack's own bound: a worker the cut left held would hold the fast path up", proxied, temps)...)
}

// A slow link between the front door and the app (engine.SlowLink:
// slow-upstream). Behind NGINX buffering on, the worker is freed once
// NGINX has read the body, which the link now paces: the app's write
// takes about the link's time, not the reader's, and a server with no
// worker to spare holds /fast meanwhile. Behind buffering off NGINX reads
// at its reader's pace, and the server's workers are held as without the
// link.

// LinkRule is what a slow link's cell must show of /fast on some rows.
type LinkRule struct {
	// Rows pick the cells; nil is every row.
	Rows []string
	// Fast is what /fast's p95 says of the workers against LinkHeldMs:
	// LinkHeld (over it: /fast waited for workers the link or the reader
	// held) or LinkNotHeld (under it); Why says why.
	Fast, Why string
}

// What a LinkRule asserts of /fast.
const (
	LinkHeld    = "held"
	LinkNotHeld = "not-held"
)

// LinkHeldMs is the line a slow link's /fast p95 is judged against.
// Sync's two workers held made it 907 to 1,055 ms behind buffering on
// (while NGINX reads the two bodies over the link) and 893 to 2,432 ms
// behind buffering off, astride the stall line; the rows with workers to
// spare stayed at 3.9 to 8.2 ms, near the protected class's 10 ms, since
// /fast goes through the hop too (reports/measurements.md, stop 68).
// 100 ms lies 9 times under the one and 12 times over the other.
const LinkHeldMs = 100.0

// LinkRules are slow-upstream's rules, the first that matches a cell
// applying.
var LinkRules = []LinkRule{
	{Rows: []string{"gunicorn-sync-2"}, Fast: LinkHeld,
		Why: "its 2 workers are held while NGINX reads the 2 bodies, over the slow link (about 1.5 s) or at the readers' pace, and /fast waits for them"},
	{Fast: LinkNotHeld,
		Why: "a worker held by the slow link is one of its threads or tasks; the others serve /fast"},
}

// LinkRuleFor is the rule of a slow-upstream cell of row.
func LinkRuleFor(row string) LinkRule {
	for _, r := range LinkRules {
		if r.Rows == nil || slices.Contains(r.Rows, row) {
			return r
		}
	}
	panic("verdict: LinkRules has no rule for every row")
}

// LinkVerdicts are slow-upstream's verdicts on the cell measured by
// condition id, row on path: behind buffering on, the app's write takes
// the link's time (from half of it, linkS, to half the reader's,
// readerS); and /fast is on the side of LinkHeldMs the rule says.
func LinkVerdicts(row, path, id string, linkS, readerS float64) []Verdict {
	r := LinkRuleFor(row)
	base := strings.TrimPrefix(id, "matrix-")
	where := fmt.Sprintf("%s %s under slow-upstream", row, pathText(path))
	var vs []Verdict
	if path == "nginx-on" {
		vs = append(vs, Verdict{ID: base + "-write-link", Kind: Lab, Unit: "s", Check: Between(id, WriteS, linkS/2, readerS/2),
			Text: fmt.Sprintf("%s: the app's write takes the slow link's time (16 MiB at 8 MiB/s: %g s), not the reader's (%g s): buffering frees the worker only as fast as NGINX can read", where, linkS, readerS)})
	}
	switch r.Fast {
	case LinkHeld:
		vs = append(vs, Verdict{ID: base + "-held", Kind: Lab, Unit: "ms", Check: Above(id, P95, LinkHeldMs),
			Text: fmt.Sprintf("%s: /fast's p95 is over %g ms: %s", where, LinkHeldMs, r.Why)})
	case LinkNotHeld:
		vs = append(vs, Verdict{ID: base + "-not-held", Kind: Lab, Unit: "ms", Check: Below(id, P95, LinkHeldMs),
			Text: fmt.Sprintf("%s: /fast's p95 stays under %g ms: %s", where, LinkHeldMs, r.Why)})
	default:
		panic("verdict: LinkRule fast " + r.Fast)
	}
	return vs
}

// UnfaultedVerdict is the verdict that the cell of fault column col
// measured by condition id (row on path: slow readers through a hop
// that slices their responses, or holds back their close) falls in the
// class of its unfaulted twin, the slow-read cell of the same row and
// path: it meets the twin's rule r, which the twin's own verdicts
// assert. The hop reads the server through the reader's own buffers, so
// the server sees the reader it sees without the fault; a fault that
// changed what the server sees (a hop that read ahead, a close that kept
// a worker) would move the cell out of the twin's class.
func UnfaultedVerdict(r CellRule, col, row, path, id string) Verdict {
	v := CellVerdict(r, row, path, id)
	v.ID = strings.TrimPrefix(id, "matrix-") + "-as-unfaulted"
	v.Text = fmt.Sprintf("%s %s under %s falls in the class of its slow-read cell without the fault (%s): %s",
		row, pathText(path), col, r.Expect, r.Why)
	return v
}

// Verdicts on the latency columns (engine.Latency50, engine.Latency150):
// each cell is read against its idle twin, /fast alone through the same
// hop, so the round trip the hop adds is taken out and what is left is
// the slow readers' doing.

// LatencyExcessMs is the most the slow readers may add to /fast's p95
// over its idle twin's where their slow-read cell is protected: the
// protected line plus the hop's jitter each way, which moves a p95 of
// 72 requests from run to run. Over 3 runs of each of the 9 such cells
// a latency (2026-12-07, AMD EPYC; reports/measurements.md, stop 69),
// the median excess was -1.7 to +2.2 ms at 50 ms (a line of 20) and
// -12.0 to +9.8 ms at 150 ms (a line of 40), a single run's at most
// +4.3 and +13.8; sync's held workers added 5,944 to 5,976 ms directly
// and 3,712 to 4,296 behind NGINX off.
func LatencyExcessMs(jitterMs float64) float64 { return ProtectedMs + jitterMs }

// Unserved counts /fast's failed requests and the slow clients not
// served whole, over the sound runs.
var Unserved = Metric{Name: "failed /fast requests and slow clients not whole", of: func(c report.Condition) (float64, error) {
	if c.RunsSound == 0 || c.RequestsTotal == 0 || c.DownloadsTotal != c.RecordsPerRun()*c.RunsSound {
		return 0, errNoClass // as Class: nothing to count, or not every slow client ran
	}
	return float64(c.RequestsTotal - c.RequestsOK + c.DownloadsTotal - c.DownloadsComplete), nil
}}

// ExceedsBy holds when m of condition a exceeds m of condition b by more
// than by; the measured value is the excess.
func ExceedsBy(a, b string, m Metric, by float64) Check {
	return condCheck{ids: []string{a, b}, m: m, judge: func(v []float64) Outcome {
		return Outcome{v[0] - v[1], fmt.Sprintf("> %g over %s's %.4g", by, b, v[1]), v[0]-v[1] > by}
	}, convex: true}
}

// IdleDelayVerdict is the harness check that the hop delayed /fast as
// set, in the idle cell measured by condition id: its median lies
// within the jitter of twice the one-way latency, plus ProtectedMs for
// the server's own time.
func IdleDelayVerdict(col, row, path, id string, latencyMs, jitterMs float64) Verdict {
	lo, hi := 2*(latencyMs-jitterMs), 2*(latencyMs+jitterMs)+ProtectedMs
	return Verdict{ID: strings.TrimPrefix(id, "matrix-") + "-delayed", Kind: Harness, Unit: "ms", Check: Between(id, P50, lo, hi),
		Text: fmt.Sprintf("%s %s under %s: /fast alone through the hop takes its round trip, twice %g ms give or take %g, plus the server's own time", row, pathText(path), col, latencyMs, jitterMs)}
}

// LatencyVerdicts are a latency cell's verdicts (condition id, row on
// path under col), against its idle twin idle: every /fast request and
// slow reader served, and /fast's p95 over the idle twin's on the side
// its slow-read cell's rule r puts it: within LatencyExcessMs of the
// hop's jitter where that cell is protected, under the stall line where
// it does not stall, past the stall line where it stalls, and past the
// protected cells' line where it is unprotected.
func LatencyVerdicts(r CellRule, col, row, path, id, idle string, jitterMs float64) []Verdict {
	base := strings.TrimPrefix(id, "matrix-")
	where := fmt.Sprintf("%s %s under %s", row, pathText(path), col)
	v := Verdict{ID: base + "-" + r.Expect + "-over-idle", Kind: Lab, Unit: "ms",
		Text: fmt.Sprintf("%s: /fast's p95 over its own at the same latency with no slow reader is as in the slow-read cell (%s): %s", where, r.Expect, r.Why)}
	switch r.Expect {
	case ExpectProtected:
		v.Check = CostsAtMost(id, idle, P95, LatencyExcessMs(jitterMs))
	case ExpectNoStall:
		v.Check = CostsAtMost(id, idle, P95, StalledMs)
	case ExpectStalled:
		v.Check = ExceedsBy(id, idle, P95, StalledMs)
	case ExpectUnprotected: // past the protected cells' own line, never inside its noise
		v.Check = ExceedsBy(id, idle, P95, LatencyExcessMs(jitterMs))
	default:
		panic("verdict: no latency verdict for a cell that expects " + r.Expect)
	}
	return []Verdict{
		{ID: base + "-served", Kind: Lab, Unit: "requests", Check: Zero(id, Unserved),
			Text: fmt.Sprintf("%s: every /fast request and every slow reader is served whole through the delay", where)},
		v,
	}
}
