package verdict

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"wsgilab/bench/internal/probe"
	"wsgilab/bench/internal/report"
)

func f(v float64) *float64 { return &v }

// goodA is article A's summaries as measured here (reports/measurements.md):
// every verdict holds on them.
func goodA() map[string]report.Condition {
	cs := map[string]report.Condition{}
	add := func(id string, dl int, p95, write, peak, least, most float64) {
		c := report.Condition{ID: id, Downloads: dl, RunsTotal: 3, RunsValid: 3, P95Ms: p95, P95MsMin: p95, P95MsMax: p95, P95MsRuns: []float64{p95, p95, p95},
			RequestsOK: 216, RequestsTotal: 216, TempfilePeakMiB: f(peak), TempfilePeakMiBMax: f(peak),
			AppCPUPercent: f(0.45), AppWorkerSendShareMin: f(least), AppWorkerSendShareMax: f(most)}
		if dl > 0 {
			c.DownloadsComplete, c.DownloadsTotal = 3*dl, 3*dl
			c.WriteS, c.CompletionS = write, 8.006
			c.AppSendQBusyShare, c.WriteEndMismatchMax = f(0.97), f(0.0027)
		}
		cs[id] = c
	}
	add("direct-0dl", 0, 1.36, 0, 0, 0, 0)
	add("direct-1dl", 1, 1.17, 6.1, 0, 0, 0.7)
	add("direct-2dl", 2, 5979.8, 6.603, 0, 0.71, 0.73)
	add("nginx-off-0dl", 0, 1.44, 0, 0, 0, 0)
	add("nginx-off-1dl", 1, 1.42, 4, 0, 0, 0.4)
	add("nginx-off-2dl", 2, 3753.6, 4.654, 0, 0.42, 0.54)
	add("nginx-on-0dl", 0, 1.46, 0, 0, 0, 0)
	add("nginx-on-1dl", 1, 1.32, 0.05, 12.8, 0, 0.01)
	add("nginx-on-2dl", 2, 1.45, 0.094, 25.6, 0.006, 0.016)
	add("gthread-2dl", 2, 1.32, 6.6, 0, 0.7, 0.73)
	add("pilot-direct", 2, 4777, 5.39, 0, 0.6, 0.6)
	add("pilot-nginx-off", 2, 296, 0.92, 0, 0.1, 0.1)
	add("pilot-nginx-on", 2, 1.5, 0.05, 16.8, 0, 0.01)
	// Under article-host TCP memory (as measured here): the same but for
	// shorter writes through larger send buffers.
	for id, c := range maps.Clone(cs) {
		cs[id+"@article-host"] = c
	}
	add("direct-2dl@article-host", 2, 4116, 4.74, 0, 0.52, 0.53)
	add("nginx-off-2dl@article-host", 2, 1100, 1.97, 0, 0.2, 0.25)
	add("pilot-direct@article-host", 2, 2504, 3.12, 0, 0.34, 0.35)
	add("pilot-nginx-off@article-host", 2, 1.3, 0.005, 0, 0, 0)
	// The sweep at 2 MiB/s, stock (16 MiB is direct-2dl, nginx-off-2dl).
	for _, x := range []struct {
		id          string
		p95, writeS float64
	}{
		{"sweep-direct-4m-2mps", 1.3, 0.46}, {"sweep-direct-8m-2mps", 2068, 2.69}, {"sweep-direct-12m-2mps", 3734, 4.36},
		{"sweep-direct-24m-2mps", 9855, 10.49}, {"sweep-nginx-off-4m-2mps", 1.7, 0.01}, {"sweep-nginx-off-8m-2mps", 1.5, 0.47},
		{"sweep-nginx-off-12m-2mps", 1526, 2.42}, {"sweep-nginx-off-24m-2mps", 8226, 8.85},
	} {
		add(x.id, 2, x.p95, x.writeS, 0, 0.5, 0.5)
	}
	// The pacer cross-check's twins, as measured here (stop 67).
	add(ToxiproxyTwinID("direct-2dl"), 2, 5975, 6.594, 0, 0.71, 0.73)
	add(ToxiproxyTwinID("nginx-off-2dl"), 2, 3755, 4.650, 0, 0.42, 0.54)
	add(ToxiproxyTwinID("nginx-on-2dl"), 2, 1.57, 0.096, 25.6, 0.006, 0.016)
	return cs
}

// goodSweep is the buffer model's fit as measured here.
func goodSweep() *report.Sweep {
	s := &report.Sweep{Score: report.SweepScore{Cells: 10, WriteRight: 9, StallRight: 10, WriteShare: f(0.9), StallShare: f(1)}}
	for _, id := range sweepMinimalSet {
		s.Cells = append(s.Cells, report.SweepCell{Condition: id, Predicted: true})
	}
	return s
}

// goodB is article B's rows as measured here (make test's ci profile).
func goodB() []report.Throughput {
	rates := map[string][2]float64{ // no blocking, 0.1 s blocking
		"gunicorn-sync": {2193, 9.8}, "gunicorn-gevent": {2048, 780}, "uwsgi-sync": {2081, 9.8},
		"uwsgi-async-ugreen": {1972, 9.8}, "uwsgi-gevent": {1618, 700}, "gunicorn-gthread-4": {2314, 38.8},
	}
	var rows []report.Throughput
	for _, s := range slices.Sorted(maps.Keys(rates)) {
		for i, block := range []int{0, 100} {
			for _, gen := range []string{Ours, AB} {
				r := rates[s][i]
				if gen == AB {
					r *= 1.05
				}
				runs := []float64{r}
				if block == 0 { // paired runs, noisy: one pair of three far off
					runs = []float64{r, r * 0.97, r * 1.02}
					if gen == AB {
						runs[1] *= 1.6
					}
				}
				rows = append(rows, report.Throughput{ID: Cell(s, block), Server: s, Generator: gen, BlockingMs: block,
					N: 3000, C: 100, ReqPerS: r, ReqPerSRuns: runs, GeneratorBusy: 0.33, GeneratorBusyRuns: []float64{0.33, 0.31, 0.35}})
			}
		}
	}
	return rows
}

func good() Data { return Data{Conditions: goodA(), Throughput: goodB(), Sweep: goodSweep()} }

func setA(id string, change func(*report.Condition)) func(*Data) {
	return func(d *Data) {
		c := d.Conditions[id]
		change(&c)
		d.Conditions[id] = c
	}
}

func setRate(cell, gen string, rate float64) func(*Data) {
	return func(d *Data) {
		for i, r := range d.Throughput {
			if r.ID == cell && r.Generator == gen {
				runs := make([]float64, len(r.ReqPerSRuns))
				for k := range runs {
					runs[k] = rate
				}
				d.Throughput[i].ReqPerS, d.Throughput[i].ReqPerSRuns = rate, runs
			}
		}
	}
}

func p95(v float64) func(*report.Condition) {
	return func(c *report.Condition) { c.P95Ms, c.P95MsMin, c.P95MsMax, c.P95MsRuns = v, v, v, []float64{v, v, v} }
}
func write(v float64) func(*report.Condition) { return func(c *report.Condition) { c.WriteS = v } }

// contrary makes each verdict's data say the opposite: the verdict must fail.
var contrary = map[string]func(*Data){
	// A twin paced at twice the rate, or one that lost the cell's class.
	"pacers-fast-direct-2dl":               setA(ToxiproxyTwinID("direct-2dl"), p95(900)),
	"pacers-write-direct-2dl":              setA(ToxiproxyTwinID("direct-2dl"), write(3.31)),
	"pacers-completion-direct-2dl":         setA(ToxiproxyTwinID("direct-2dl"), func(c *report.Condition) { c.CompletionS = 4.02 }),
	"pacers-fast-nginx-off-2dl":            setA(ToxiproxyTwinID("nginx-off-2dl"), p95(9)),
	"pacers-write-nginx-off-2dl":           setA(ToxiproxyTwinID("nginx-off-2dl"), write(6.6)),
	"pacers-completion-nginx-off-2dl":      setA(ToxiproxyTwinID("nginx-off-2dl"), func(c *report.Condition) { c.CompletionS = 10.5 }),
	"pacers-fast-nginx-on-2dl":             setA(ToxiproxyTwinID("nginx-on-2dl"), p95(3700)),
	"pacers-write-nginx-on-2dl":            setA(ToxiproxyTwinID("nginx-on-2dl"), write(4.6)),
	"pacers-completion-nginx-on-2dl":       setA(ToxiproxyTwinID("nginx-on-2dl"), func(c *report.Condition) { c.CompletionS = 4.0 }),
	"direct-2dl-stalls":                    setA("direct-2dl", p95(900)),
	"direct-1dl-idle":                      setA("direct-1dl", p95(5900)),
	"nginx-off-1dl-idle":                   setA("nginx-off-1dl", p95(12)),
	"nginx-on-1dl-idle":                    setA("nginx-on-1dl", p95(10)),
	"nginx-on-2dl-idle":                    setA("nginx-on-2dl", p95(1100)),
	"gthread-2dl-idle":                     setA("gthread-2dl", p95(5900)),
	"direct-0dl-idle":                      setA("direct-0dl", p95(10.5)),
	"nginx-off-0dl-idle":                   setA("nginx-off-0dl", p95(20)),
	"nginx-on-0dl-idle":                    setA("nginx-on-0dl", p95(20)),
	"nginx-off-2dl-not-idle":               setA("nginx-off-2dl", p95(2.3)),
	"nginx-off-2dl-below-direct":           setA("nginx-off-2dl", p95(6000)),
	"write-nginx-off-below-direct":         setA("nginx-off-2dl", write(6.7)),
	"write-nginx-on-below-off":             setA("nginx-on-2dl", write(5)),
	"write-nginx-on-short":                 setA("nginx-on-2dl", write(0.6)),
	"tempfile-nginx-on-2dl":                setA("nginx-on-2dl", func(c *report.Condition) { c.TempfilePeakMiB = f(0) }),
	"tempfile-nginx-off-0dl":               setA("nginx-off-0dl", func(c *report.Condition) { c.TempfilePeakMiBMax = f(0.1) }),
	"tempfile-nginx-off-1dl":               setA("nginx-off-1dl", func(c *report.Condition) { c.TempfilePeakMiBMax = f(16) }),
	"tempfile-nginx-off-2dl":               setA("nginx-off-2dl", func(c *report.Condition) { c.TempfilePeakMiBMax = f(32) }),
	"workers-blocked-direct-2dl":           setA("direct-2dl", func(c *report.Condition) { c.AppWorkerSendShareMin = f(0.1) }),
	"workers-free-nginx-on-2dl":            setA("nginx-on-2dl", func(c *report.Condition) { c.AppWorkerSendShareMax = f(0.6) }),
	"app-cpu-direct-2dl":                   setA("direct-2dl", func(c *report.Condition) { c.AppCPUPercent = f(24) }),
	"sendq-busy-direct-2dl":                setA("direct-2dl", func(c *report.Condition) { c.AppSendQBusyShare = f(0.2) }),
	"completion-direct-8s":                 setA("direct-2dl", func(c *report.Condition) { c.CompletionS = 9.1 }),
	"completion-nginx-off-8s":              setA("nginx-off-2dl", func(c *report.Condition) { c.CompletionS = 7.2 }),
	"completion-nginx-on-8s":               setA("nginx-on-2dl", func(c *report.Condition) { c.CompletionS = 12 }),
	"write-ends-when-rest-fits-direct-2dl": setA("direct-2dl", func(c *report.Condition) { c.WriteEndMismatchMax = f(0.3) }),
	"pilot-direct-stalls":                  setA("pilot-direct", p95(400)),
	"pilot-nginx-on-idle":                  setA("pilot-nginx-on", p95(300)),
	"pilot-nginx-off-write-held":           setA("pilot-nginx-off", write(0.004)),

	"nginx-off-2dl-near-article@article-host": setA("nginx-off-2dl@article-host", p95(3700)),
	"pilot-nginx-off-idle@article-host":       setA("pilot-nginx-off@article-host", p95(296)),
	"pilot-nginx-off-write-free@article-host": setA("pilot-nginx-off@article-host", write(0.9)),

	"sweep-p95-grows-with-size-direct":    setA("sweep-direct-24m-2mps", p95(1000)),
	"sweep-p95-grows-with-size-nginx-off": setA("sweep-nginx-off-24m-2mps", p95(2)),
	"sweep-direct-stalls-at-smaller-size": setA("sweep-nginx-off-8m-2mps", p95(1500)),
	"model-write-time":                    func(d *Data) { d.Sweep.Score.WriteShare = f(0.7) },
	"model-stall":                         func(d *Data) { d.Sweep.Score.StallShare = f(0.8) },

	"b/no-blocking-all-alike": func(d *Data) {
		setRate(Cell("uwsgi-sync", 0), Ours, 900)(d)
		setRate(Cell("uwsgi-sync", 0), AB, 900)(d)
	},
	"b/gunicorn-sync-collapses": setRate(Cell("gunicorn-sync", 100), Ours, 38),
	"b/uwsgi-sync-collapses":    setRate(Cell("uwsgi-sync", 100), Ours, 5),
	"b/gevent-keeps-rate":       setRate(Cell("gunicorn-gevent", 100), Ours, 300), // 300 of a possible min(2048, 1000): under half
	"b/uwsgi-gevent-keeps-rate": setRate(Cell("uwsgi-gevent", 100), Ours, 9.8),
	"b/ugreen-does-not-help":    setRate(Cell("uwsgi-async-ugreen", 100), Ours, 500),
	"b/no-failed-requests": func(d *Data) {
		for i := range d.Throughput {
			if d.Throughput[i].ID == Cell("gunicorn-gthread-4", 100) && d.Throughput[i].Generator == AB {
				d.Throughput[i].Failed = 3
			}
		}
	},
	"b/ours-matches-ab": setRate(Cell("gunicorn-gevent", 0), AB, 3000),
	"b/generator-has-headroom": func(d *Data) {
		for i, r := range d.Throughput {
			if r.ID == Cell("uwsgi-sync", 0) && r.Generator == Ours {
				d.Throughput[i].GeneratorBusy, d.Throughput[i].GeneratorBusyRuns = 0.98, []float64{0.97, 0.98, 0.99}
			}
		}
	},
}

// The cross-check compares pairs, not medians: one disturbed pair does not
// move it, a slowed generator in most pairs does, and unpaired runs are
// missing data.
func TestPairedRatio(t *testing.T) {
	row := func(gen string, runs ...float64) report.Throughput {
		return report.Throughput{ID: "x-block0", Generator: gen, ReqPerS: runs[0], ReqPerSRuns: runs}
	}
	r, err := PairedRatio(row(Ours, 2000, 1300, 2100, 1900, 2050), row(AB, 2100, 2000, 1200, 2000, 2100))
	require.NoError(t, err)
	assert.InDelta(t, 0.952, r, 0.001, "two disturbed pairs (0.65 and 1.75) are outvoted")
	r, err = PairedRatio(row(Ours, 1000, 990, 1900, 1010, 1000), row(AB, 2100, 2000, 2000, 2000, 2100))
	require.NoError(t, err)
	assert.Less(t, r, 1-OursVsABTolerance, "a generator slowed in most pairs is caught")
	_, err = PairedRatio(row(Ours, 2000, 2000, 2000), row(AB, 2000, 2000))
	assert.ErrorContains(t, err, "3 runs against 2 of x-block0 (ab)")
	_, err = PairedRatio(row(Ours, 2000, 2000), row(AB, 2000, 2000))
	assert.ErrorContains(t, err, "at least 3")
}

func all() []Verdict { return slices.Concat(ArticleA, ArticleHost, Sweep, ArticleB, Pacers) }

func clone(d Data) Data {
	c := Data{Conditions: maps.Clone(d.Conditions), Throughput: slices.Clone(d.Throughput)}
	if d.Sweep != nil {
		s := *d.Sweep
		c.Sweep = &s
	}
	return c
}

// contraryOf is the contrary case of verdict id: its own, or, for a
// verdict of article A's table under a TCP profile, the table's case
// applied to that profile's conditions.
func contraryOf(id string) (func(*Data), bool) {
	if change, ok := contrary[id]; ok {
		return change, true
	}
	base, profile, found := strings.Cut(id, "@")
	change, ok := contrary[base]
	if !found || !ok {
		return nil, false
	}
	return func(d *Data) {
		under := Data{Conditions: map[string]report.Condition{}}
		for cid, c := range d.Conditions {
			if b, ok := strings.CutSuffix(cid, "@"+profile); ok {
				under.Conditions[b] = c
			}
		}
		change(&under)
		for b, c := range under.Conditions {
			d.Conditions[b+"@"+profile] = c
		}
	}, true
}

func status(t *testing.T, v Verdict, d Data) report.Claim {
	t.Helper()
	cs := Evaluate([]Verdict{v}, d)
	require.Len(t, cs, 1)
	return cs[0]
}

func TestTablesAreValid(t *testing.T) {
	require.NoError(t, Validate(ArticleA))
	require.NoError(t, Validate(ArticleB))
	require.NoError(t, Validate(ArticleHost))
	require.NoError(t, Validate(Sweep))
	require.NoError(t, Validate(all()))
}

// Every verdict holds on the data measured here, fails on contrary data,
// and never holds when the data it reads is missing or empty.
func TestVerdicts(t *testing.T) {
	for _, v := range all() {
		t.Run(v.ID, func(t *testing.T) {
			c := status(t, v, good())
			require.Equal(t, report.StatusHolds, c.Status, "on good data: %+v", c)
			assert.True(t, c.Holds)
			assert.Equal(t, string(v.Kind), c.Kind)

			change, ok := contraryOf(v.ID)
			require.True(t, ok, "no contrary case for %s", v.ID)
			d := clone(good())
			change(&d)
			c = status(t, v, d)
			assert.Equal(t, report.StatusFails, c.Status, "on contrary data: %+v", c)
			assert.False(t, c.Holds)

			for _, id := range v.Check.Needs() {
				// The condition ran, but no run of it was valid.
				d := clone(good())
				if _, isA := d.Conditions[id]; isA {
					d.Conditions[id] = report.Condition{ID: id, RunsTotal: 3}
				} else {
					d.Throughput = slices.DeleteFunc(d.Throughput, func(r report.Throughput) bool { return r.ID == id && r.Generator == Ours })
				}
				c := status(t, v, d)
				assert.Equal(t, report.StatusMissing, c.Status, "%s ran without valid data: %+v", id, c)
				assert.False(t, c.Holds)
				assert.Contains(t, c.Note, id)

				// The condition did not run at all: not run, never a pass.
				d = clone(good())
				delete(d.Conditions, id)
				d.Throughput = slices.DeleteFunc(d.Throughput, func(r report.Throughput) bool { return r.ID == id })
				c = status(t, v, d)
				assert.Equal(t, report.StatusNotRun, c.Status, "%s did not run: %+v", id, c)
				assert.False(t, c.Holds || c.Evaluated)
			}
		})
	}
}

// A verdict on the sampler's figures fails as missing when the sampler's
// figures are absent, and the others are untouched.
func TestSampledFiguresMissing(t *testing.T) {
	d := clone(good())
	for id, c := range d.Conditions {
		c.TempfilePeakMiB, c.TempfilePeakMiBMax, c.AppCPUPercent = nil, nil, nil
		c.AppWorkerSendShareMin, c.AppWorkerSendShareMax, c.AppSendQBusyShare, c.WriteEndMismatchMax = nil, nil, nil, nil
		d.Conditions[id] = c
	}
	sampled := []string{"tempfile-nginx-on-2dl", "tempfile-nginx-off-0dl", "tempfile-nginx-off-1dl", "tempfile-nginx-off-2dl",
		"workers-blocked-direct-2dl", "workers-free-nginx-on-2dl", "app-cpu-direct-2dl", "sendq-busy-direct-2dl",
		"write-ends-when-rest-fits-direct-2dl"}
	for _, c := range Evaluate(ArticleA, d) {
		if slices.Contains(sampled, c.ID) {
			assert.Equal(t, report.StatusMissing, c.Status, "%s: %+v", c.ID, c)
			assert.Contains(t, c.Note, "from the sampler")
		} else {
			assert.Equal(t, report.StatusHolds, c.Status, "%s: %+v", c.ID, c)
		}
	}
}

// A download verdict on a condition whose downloads never completed is
// missing data, even though the write time reads 0 (which is "< 0.5").
func TestNoCompleteDownloadIsMissing(t *testing.T) {
	d := clone(good())
	setA("nginx-on-2dl", func(c *report.Condition) { c.DownloadsComplete, c.WriteS = 0, 0 })(&d)
	v, ok := Find(ArticleA, "write-nginx-on-short")
	require.True(t, ok)
	c := status(t, v, d)
	assert.Equal(t, report.StatusMissing, c.Status)
	assert.Contains(t, c.Note, "no complete download")
}

// An article B row with no rate (a generator that measured nothing) is
// missing data, not a rate of 0 that "collapses".
func TestEmptyRateIsMissing(t *testing.T) {
	d := clone(good())
	setRate(Cell("gunicorn-sync", 100), Ours, 0)(&d)
	v, _ := Find(ArticleB, "b/gunicorn-sync-collapses")
	c := status(t, v, d)
	assert.Equal(t, report.StatusMissing, c.Status)
	assert.Contains(t, c.Note, "measured no rate")
}

// Harness checks and article claims are told apart.
func TestKinds(t *testing.T) {
	var harness []string
	for _, v := range all() {
		if v.Kind == Harness {
			harness = append(harness, v.ID)
		}
	}
	assert.ElementsMatch(t, []string{"completion-direct-8s", "completion-nginx-off-8s", "completion-nginx-on-8s",
		"write-ends-when-rest-fits-direct-2dl", "completion-direct-8s@article-host", "completion-nginx-off-8s@article-host",
		"completion-nginx-on-8s@article-host", "write-ends-when-rest-fits-direct-2dl@article-host",
		"b/ours-matches-ab", "b/generator-has-headroom",
		"pacers-fast-direct-2dl", "pacers-write-direct-2dl", "pacers-completion-direct-2dl",
		"pacers-fast-nginx-off-2dl", "pacers-write-nginx-off-2dl", "pacers-completion-nginx-off-2dl",
		"pacers-fast-nginx-on-2dl", "pacers-write-nginx-on-2dl", "pacers-completion-nginx-on-2dl"}, harness)
}

// The verdicts that read ab's rows fail as missing when ab's row of a
// cell is gone, though ours is there.
func TestMissingABRow(t *testing.T) {
	for _, id := range []string{"b/no-failed-requests", "b/ours-matches-ab"} {
		v, ok := Find(ArticleB, id)
		require.True(t, ok)
		d := clone(good())
		d.Throughput = slices.DeleteFunc(d.Throughput, func(r report.Throughput) bool {
			return r.ID == Cell("uwsgi-gevent", 0) && r.Generator == AB
		})
		c := status(t, v, d)
		assert.Equal(t, report.StatusMissing, c.Status, "%s: %+v", id, c)
		assert.Contains(t, c.Note, "uwsgi-gevent-block0: no row from ab")
	}
}

// A condition that was started but produced nothing (its pod failed to
// start) counts as run: its verdicts fail as missing, not skip.
func TestAttemptedWithoutRowsIsMissing(t *testing.T) {
	d := clone(good())
	delete(d.Conditions, "direct-2dl")
	d.Attempted = []string{"direct-2dl"}
	v, _ := Find(ArticleA, "direct-2dl-stalls")
	c := status(t, v, d)
	assert.Equal(t, report.StatusMissing, c.Status)
	assert.Contains(t, c.Note, "direct-2dl: no summary")

	d = clone(good())
	d.Throughput = slices.DeleteFunc(d.Throughput, func(r report.Throughput) bool { return r.ID == Cell("gunicorn-sync", 100) })
	d.Attempted = []string{Cell("gunicorn-sync", 100)}
	v, _ = Find(ArticleB, "b/gunicorn-sync-collapses")
	c = status(t, v, d)
	assert.Equal(t, report.StatusMissing, c.Status)
}

// The model's verdicts fail as missing when no sweep was fitted, or when
// the model predicted fewer cells than they need.
func TestModelVerdictsNeedAFit(t *testing.T) {
	v, _ := Find(Sweep, "model-write-time")
	d := clone(good())
	d.Sweep = nil
	c := status(t, v, d)
	assert.Equal(t, report.StatusMissing, c.Status)
	assert.Contains(t, c.Note, "no sweep was fitted")
	d = clone(good())
	d.Sweep.Score.Cells = 3
	c = status(t, v, d)
	assert.Equal(t, report.StatusMissing, c.Status)
	assert.Contains(t, c.Note, "predicted 3 sweep cells")
	// A needed cell the model could not predict.
	d = clone(good())
	d.Sweep.Cells = d.Sweep.Cells[1:]
	c = status(t, v, d)
	assert.Equal(t, report.StatusMissing, c.Status)
	assert.Contains(t, c.Note, "sweep-direct-4m-2mps: the model has no prediction for it")
}

// The direct path that never stalls does not "stall first" against one
// that never stalls either.
func TestStallsFirstWhenNeitherStalls(t *testing.T) {
	d := clone(good())
	for _, id := range sweepMinimalSet {
		setA(id, p95(2))(&d)
	}
	v, _ := Find(Sweep, "sweep-direct-stalls-at-smaller-size")
	c := status(t, v, d)
	assert.Equal(t, report.StatusFails, c.Status, "%+v", c)
	assert.Zero(t, c.Measured, "no infinity: claims.json must encode")
	assert.Contains(t, c.Threshold, "never stalls")
	_, err := json.Marshal(c)
	assert.NoError(t, err)
}

// Grows reads each cell's least run: one run a busy host slowed (the 4
// MiB cell at 61.2 and 2.41 ms, its median 31.8 ms against the 8 MiB
// cell's 2.45, a make test of 2026-12-03) does not break the row; nor
// do both runs of a cell that does not stall, slowed by a cluster of
// hiccups (GrowsNoiseMs). A row whose runs all fall, or that never
// stalls, still fails.
func TestGrowsReadsTheLeastRun(t *testing.T) {
	ids := []string{"s4", "s8", "s12", "s16", "s24"}
	row := func(runs ...[2]float64) Data {
		d := Data{Conditions: map[string]report.Condition{}}
		for i, r := range runs {
			lo, hi := min(r[0], r[1]), max(r[0], r[1])
			d.Conditions[ids[i]] = report.Condition{ID: ids[i], Downloads: 2, RunsTotal: 2, RunsValid: 2,
				P95Ms: (lo + hi) / 2, P95MsMin: lo, P95MsMax: hi, P95MsRuns: []float64{r[0], r[1]}}
		}
		return d
	}
	v := Verdict{ID: "grows", Kind: Lab, Check: Grows(ids...)}
	ci := row([2]float64{61.17, 2.41}, [2]float64{2.55, 2.36}, [2]float64{1528, 2088}, [2]float64{3762, 4340}, [2]float64{8231, 7722})
	c := Evaluate([]Verdict{v}, ci)[0]
	assert.Equal(t, report.StatusHolds, c.Status, "%+v", c)
	assert.InDelta(t, 7722/2.41, c.Measured, 1)
	// A CI run of 2026-12-04: the 4 MiB cell slowed in both runs.
	both := row([2]float64{28.7, 35.2}, [2]float64{1.35, 2.1}, [2]float64{1528, 2088}, [2]float64{3762, 4340}, [2]float64{8231, 8207})
	assert.Equal(t, report.StatusHolds, Evaluate([]Verdict{v}, both)[0].Status, "a no-stall cell's noise is not a fall")
	falls := row([2]float64{2.4, 2.5}, [2]float64{2100, 2200}, [2]float64{900, 950}, [2]float64{3762, 4340}, [2]float64{8231, 7722})
	assert.Equal(t, report.StatusFails, Evaluate([]Verdict{v}, falls)[0].Status, "2,100 ms at 8 MiB, 900 at 12")
	flat := row([2]float64{2.4, 2.5}, [2]float64{2.4, 2.6}, [2]float64{2.2, 3}, [2]float64{2.5, 2.9}, [2]float64{2.6, 2.7})
	assert.Equal(t, report.StatusFails, Evaluate([]Verdict{v}, flat)[0].Status, "a row that never stalls does not grow")
}

// The write-end check's claim names the download its figure comes from:
// a failure in CI's log says which hop held the bytes, when and over how
// long a read, with no report directory to open.
func TestWriteEndClaimNamesItsSample(t *testing.T) {
	v, ok := Find(ArticleA, "write-ends-when-rest-fits-direct-2dl")
	require.True(t, ok)
	d := clone(good())
	setA("direct-2dl", func(c *report.Condition) {
		c.WriteEndMismatchMax = f(0.0258)
		c.WriteEndWorst = &report.WriteEndQueues{ID: "direct-2dl-r1-dl2", AtMs: 6676.7, EndMs: 6626.9, QueuedBytes: 2_929_000,
			Hops: map[probe.Hop]int64{probe.HopAppToClient: 2_855_000, probe.HopClientFromApp: 74_000}, ReadMs: 0.24,
			UnreadBytes: 2_855_000, UnreadAfterBytes: 2_855_000, OwnSockets: true, WallStepMs: 0.004}
	})(&d)
	c := status(t, v, d)
	assert.Equal(t, report.StatusFails, c.Status)
	assert.Equal(t, "direct-2dl worst: direct-2dl-r1-dl2 49.8 ms after the write end: queued 2929000 B "+
		"(app->client 2855000, client<-app 74000) against unread 2855000 to 2855000 B over a 0.24 ms read; "+
		"the run's wall clock stepped 0.004 ms", c.Note)

	// A check without an explanation keeps no note.
	v, _ = Find(ArticleA, "completion-direct-8s")
	assert.Empty(t, status(t, v, d).Note)
}
