package verdict

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"wsgilab/bench/internal/report"
)

// cutCell is a sound reset cell as measured (reports/measurements.md):
// both clients cut at 4 MiB less their header, the app's records as
// records says, /fast after the cut served at once, nothing left.
func cutCell(id, records string, proxied bool) report.Condition {
	freed := -0.01
	cut := &report.Cut{CutBytes: 4 << 20, Clients: 2, AtCut: 2, BytesMin: 4194141, BytesMax: 4194145, CutAtS: 2.03,
		Records: 2, Incomplete: 2, FreedAfterCutS: &freed, FastAfter: 55, FastAfterOK: 55, FastAfterP95Ms: 1.9,
		FDsLeaked: map[string]int{"app": 0}}
	switch records {
	case CutTakenWhole:
		cut.Incomplete, cut.Complete = 0, 2
		freed = -1.96
	case CutKeptFromApp:
		cut.Records, cut.Incomplete, cut.Missing, cut.FreedAfterCutS = 0, 0, 2, nil
	}
	if proxied {
		none := 0
		cut.FDsLeaked["proxy"], cut.TempFilesLeft = 0, &none
	}
	return report.Condition{ID: id, RunsTotal: 3, RunsSound: 3, Fault: "reset-mid-download", Cut: cut}
}

func TestCutVerdicts(t *testing.T) {
	cases := []struct {
		col, path, records string
		proxied            bool
		ids                []string
	}{
		{"reset-mid-download", "direct", CutSeen, false, []string{"cut", "seen", "freed", "next-served", "next-not-held", "no-fd-leak"}},
		{"reset-mid-download", "nginx-off", CutSeen, true, []string{"cut", "seen", "freed", "next-served", "next-not-held", "no-fd-leak", "no-proxy-fd-leak", "no-temp-left"}},
		{"reset-mid-download", "nginx-on", CutTakenWhole, true, []string{"cut", "taken-whole", "next-served", "next-not-held", "no-fd-leak", "no-proxy-fd-leak", "no-temp-left"}},
		{"reset-mid-upload", "direct", CutSeen, false, []string{"cut", "seen", "freed", "next-served", "next-not-held", "no-fd-leak"}},
		{"reset-mid-upload", "nginx-on", CutKeptFromApp, true, []string{"cut", "kept-from-app", "next-served", "next-not-held", "no-fd-leak", "no-proxy-fd-leak"}},
		{"reset-mid-upload", "nginx-on-reqbuf-off", CutSeen, true, []string{"cut", "seen", "freed", "next-served", "next-not-held", "no-fd-leak", "no-proxy-fd-leak"}},
	}
	// contrary breaks one figure, which fails the verdict of that suffix.
	contrary := map[string]func(c *report.Cut){
		"cut":              func(c *report.Cut) { c.AtCut = 1 },
		"seen":             func(c *report.Cut) { c.Incomplete, c.Complete = 1, 1 },
		"freed":            func(c *report.Cut) { v := 5.9; c.FreedAfterCutS = &v },
		"taken-whole":      func(c *report.Cut) { c.Complete, c.Incomplete = 1, 1 },
		"kept-from-app":    func(c *report.Cut) { c.Records, c.Missing = 1, 1 },
		"next-served":      func(c *report.Cut) { c.FastAfterOK = 54 },
		"next-not-held":    func(c *report.Cut) { c.FastAfterP95Ms = 1200 },
		"no-fd-leak":       func(c *report.Cut) { c.FDsLeaked["app"] = 2 },
		"no-proxy-fd-leak": func(c *report.Cut) { c.FDsLeaked["proxy"] = 1 },
		"no-temp-left":     func(c *report.Cut) { n := 1; c.TempFilesLeft = &n },
	}
	for _, tc := range cases {
		row := "gunicorn-sync-2"
		id := "matrix-" + tc.col + "-" + row + "-" + tc.path
		vs := CutVerdicts(tc.col, row, tc.path, id, tc.proxied)
		var got []string
		for _, v := range vs {
			got = append(got, strings.TrimPrefix(v.ID, strings.TrimPrefix(id, "matrix-")+"-"))
		}
		require.Equal(t, tc.ids, got, id)
		good := Data{Conditions: map[string]report.Condition{id: cutCell(id, tc.records, tc.proxied)}}
		for _, c := range Evaluate(vs, good) {
			assert.Equal(t, report.StatusHolds, c.Status, "%s on the measured figures: %+v", c.ID, c)
		}
		failsAlone(t, vs, got, contrary, func() report.Condition { return cutCell(id, tc.records, tc.proxied) })
		// Missing data is missing, never holds: no record of the cut, no sound run.
		for name, broken := range map[string]report.Condition{
			"no cut":       {ID: id, RunsTotal: 3, RunsSound: 3},
			"no sound run": {ID: id, RunsTotal: 3, Cut: cutCell(id, tc.records, tc.proxied).Cut},
		} {
			for _, c := range Evaluate(vs, Data{Conditions: map[string]report.Condition{id: broken}}) {
				assert.Equal(t, report.StatusMissing, c.Status, "%s with %s: %+v", c.ID, name, c)
			}
		}
	}
}

// failsAlone breaks, for each verdict of vs (its id ending suffixes[i]),
// the one figure contrary names in a fresh cell from good, and requires
// that verdict alone to fail.
func failsAlone(t *testing.T, vs []Verdict, suffixes []string, contrary map[string]func(c *report.Cut), good func() report.Condition) {
	t.Helper()
	for i, suffix := range suffixes {
		bad := good()
		contrary[suffix](bad.Cut)
		for j, c := range Evaluate(vs, Data{Conditions: map[string]report.Condition{bad.ID: bad}}) {
			want := report.StatusHolds
			if j == i {
				want = report.StatusFails
			}
			assert.Equal(t, want, c.Status, "%s, %s broken: %+v", c.ID, suffix, c)
		}
	}
}

// A stack's reset verdicts: the cut (harness) and what it left, the fast
// path after it bounded by the stack's own bound, each failing on the
// figure it reads; a team's app keeps no records, so none of the
// matrix's record verdicts.
func TestStackCutVerdicts(t *testing.T) {
	const id = "stack-shop-reset-mid-download-2"
	for _, tc := range []struct {
		proxied, temps bool
		ids            []string
	}{
		{false, false, []string{"cut", "next-served", "next-not-held", "no-fd-leak"}},
		{true, false, []string{"cut", "next-served", "next-not-held", "no-fd-leak", "no-proxy-fd-leak"}},
		{true, true, []string{"cut", "next-served", "next-not-held", "no-fd-leak", "no-proxy-fd-leak", "no-temp-left"}},
	} {
		vs := StackCutVerdicts("shop", "reset-mid-download", id, "/healthz", 2, 50, tc.proxied, tc.temps)
		var got []string
		for _, v := range vs {
			got = append(got, strings.TrimPrefix(v.ID, StackCutBase("shop", "reset-mid-download")+"-"))
		}
		require.Equal(t, tc.ids, got)
		assert.Equal(t, Harness, vs[0].Kind)
		assert.Contains(t, vs[2].Text, "/healthz after the cut has a p95 under 50 ms")
		good := cutCell(id, CutSeen, tc.proxied)
		good.Cut.Records, good.Cut.Incomplete, good.Cut.FreedAfterCutS = 0, 0, nil // a team's app keeps none
		for _, c := range Evaluate(vs, Data{Conditions: map[string]report.Condition{id: good}}) {
			assert.Equal(t, report.StatusHolds, c.Status, "%s: %+v", c.ID, c)
		}
		contrary := map[string]func(c *report.Cut){
			"cut":              func(c *report.Cut) { c.AtCut = 1 },
			"next-served":      func(c *report.Cut) { c.FastAfterOK = 54 },
			"next-not-held":    func(c *report.Cut) { c.FastAfterP95Ms = 51 }, // the stack's bound, not NextHeldMs
			"no-fd-leak":       func(c *report.Cut) { c.FDsLeaked["app"] = 1 },
			"no-proxy-fd-leak": func(c *report.Cut) { c.FDsLeaked["proxy"] = 1 },
			"no-temp-left":     func(c *report.Cut) { n := 1; c.TempFilesLeft = &n },
		}
		failsAlone(t, vs, got, contrary, func() report.Condition { return cutCell(id, CutSeen, tc.proxied) })
	}
}

// Every cut column's cell has a rule, and the rules say what the lab
// measured: NGINX buffering on takes a download whole, request
// buffering keeps a cut upload from the app, and everywhere else the
// app sees the cut.
func TestCutRules(t *testing.T) {
	for _, tc := range []struct{ col, path, want string }{
		{"reset-mid-download", "direct", CutSeen}, {"reset-mid-download", "nginx-off", CutSeen}, {"reset-mid-download", "nginx-on", CutTakenWhole},
		{"reset-mid-upload", "direct", CutSeen}, {"reset-mid-upload", "nginx-on", CutKeptFromApp}, {"reset-mid-upload", "nginx-on-reqbuf-off", CutSeen},
	} {
		r, ok := CutRuleFor(tc.col, tc.path)
		require.True(t, ok, tc.col+" "+tc.path)
		assert.Equal(t, tc.want, r.Records, tc.col+" "+tc.path)
	}
	_, ok := CutRuleFor("slow-read", "direct")
	assert.False(t, ok)
}

// A slow link's verdicts: the write takes the link's time behind
// buffering on, and /fast is on the side of LinkHeldMs its rule says;
// each fails on the contrary figure.
func TestLinkVerdicts(t *testing.T) {
	cell := func(id string, p95, write float64) report.Condition {
		return report.Condition{ID: id, RunsTotal: 3, RunsSound: 3, RunsValid: 3, DownloadsComplete: 6, P95Ms: p95, WriteS: write}
	}
	for _, tc := range []struct {
		row, path        string
		p95, write       float64
		ids              []string
		badP95, badWrite float64
	}{
		{"gunicorn-sync-2", "nginx-on", 980, 1.58, []string{"write-link", "held"}, 6, 6.6},
		{"uvicorn-2", "nginx-on", 4.0, 1.50, []string{"write-link", "not-held"}, 900, 0.3},
		{"gunicorn-sync-2", "nginx-off", 2100, 2.8, []string{"held"}, 6, 0},
		{"gunicorn-gevent-2", "nginx-off", 4.5, 2.9, []string{"not-held"}, 3700, 0},
	} {
		id := "matrix-slow-upstream-" + tc.row + "-" + tc.path
		vs := LinkVerdicts(tc.row, tc.path, id, 2, 8)
		var got []string
		for _, v := range vs {
			got = append(got, strings.TrimPrefix(v.ID, strings.TrimPrefix(id, "matrix-")+"-"))
		}
		require.Equal(t, tc.ids, got, id)
		for _, c := range Evaluate(vs, Data{Conditions: map[string]report.Condition{id: cell(id, tc.p95, tc.write)}}) {
			assert.Equal(t, report.StatusHolds, c.Status, "%+v", c)
		}
		last := vs[len(vs)-1:]
		assert.Equal(t, report.StatusFails, Evaluate(last, Data{Conditions: map[string]report.Condition{id: cell(id, tc.badP95, tc.write)}})[0].Status, "%s with p95 %g", id, tc.badP95)
		if len(vs) > 1 {
			assert.Equal(t, report.StatusFails, Evaluate(vs[:1], Data{Conditions: map[string]report.Condition{id: cell(id, tc.p95, tc.badWrite)}})[0].Status, "%s with write %g", id, tc.badWrite)
		}
	}
}

// A latency cell is read over its idle twin: the hop's own round trip
// taken out, the excess on the side of its slow-read cell's line; a
// failed request fails it however fast /fast was.
func TestLatencyVerdicts(t *testing.T) {
	cell := func(id string, p95 float64, failed int) report.Condition {
		return report.Condition{ID: id, RunsTotal: 3, RunsSound: 3, RunsValid: 3, RequestsTotal: 165, RequestsOK: 165 - failed,
			Downloads: 2, DownloadsTotal: 6, DownloadsComplete: 6, P95Ms: p95}
	}
	for _, tc := range []struct {
		row, path     string
		p95, idle     float64
		want          string
		badP95        float64
		expectMeasure float64
	}{
		{"gunicorn-sync-2", "direct", 8300, 320, "stalled-over-idle", 900, 7980},
		{"gunicorn-sync-2", "nginx-off", 1400, 320, "unprotected-over-idle", 360, 1080},
		{"gunicorn-sync-2", "nginx-on", 330, 320, "protected-over-idle", 361, 10},
		{"uvicorn-2", "direct", 359, 320, "protected-over-idle", 361, 39},
	} {
		id := "matrix-latency-150ms-" + tc.row + "-" + tc.path
		idle := "matrix-latency-150ms-idle-" + tc.row + "-" + tc.path
		r, ok := TwinRule(slowRead, tc.row, tc.path)
		require.True(t, ok)
		vs := LatencyVerdicts(r, "latency-150ms", tc.row, tc.path, id, idle, 30)
		require.Len(t, vs, 2)
		assert.Equal(t, strings.TrimPrefix(id, "matrix-")+"-served", vs[0].ID)
		assert.Equal(t, strings.TrimPrefix(id, "matrix-")+"-"+tc.want, vs[1].ID)
		data := func(p95 float64, failed int) Data {
			return Data{Conditions: map[string]report.Condition{id: cell(id, p95, failed), idle: cell(idle, tc.idle, 0)}}
		}
		for _, c := range Evaluate(vs, data(tc.p95, 0)) {
			assert.Equal(t, report.StatusHolds, c.Status, "%+v", c)
		}
		assert.InDelta(t, tc.expectMeasure, Evaluate(vs[1:], data(tc.p95, 0))[0].Measured, 1e-9)
		assert.Equal(t, report.StatusFails, Evaluate(vs[1:], data(tc.badP95, 0))[0].Status, "%s with p95 %g", id, tc.badP95)
		assert.Equal(t, report.StatusFails, Evaluate(vs[:1], data(tc.p95, 1))[0].Status, "%s with a failed request", id)
		short := data(tc.p95, 0)
		c := short.Conditions[id]
		c.DownloadsTotal = 4 // a run without its slow readers: no verdict, not a pass
		short.Conditions[id] = c
		assert.NotEqual(t, report.StatusHolds, Evaluate(vs[:1], short)[0].Status, "%s with slow readers missing", id)
	}
	idle := "matrix-latency-50ms-idle-uvicorn-2-direct"
	v := IdleDelayVerdict("latency-50ms-idle", "uvicorn-2", "direct", idle, 50, 10)
	for p50, want := range map[float64]string{101: report.StatusHolds, 2: report.StatusFails, 125: report.StatusHolds, 131: report.StatusFails} {
		c := cell(idle, 0, 0)
		c.P50Ms = p50
		assert.Equal(t, want, Evaluate([]Verdict{v}, Data{Conditions: map[string]report.Condition{idle: c}})[0].Status, "p50 %g", p50)
	}
}
