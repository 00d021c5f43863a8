package htmlreport

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"wsgilab/bench/internal/report"
)

func TestScaleView(t *testing.T) {
	for _, v := range buildScale(nil) {
		assert.NotEmpty(t, v.Missing, v.ID)
	}
	f := func(v float64) *float64 { return &v }
	m := &report.Matrix{Rows: []report.MatrixRow{
		{ID: "gunicorn-sync-2", Capacity: []report.Capacity{{Column: "scale-read", Path: "nginx-on", Text: "failed from between 129 and 256",
			Memory: &report.MemoryFit{Role: "proxy", LimitMiB: 96, BaseMiB: 10, PerClientKiB: 460.8, Predicted: 191.1, LastUnder: 128, FirstReached: 256, Right: true},
			Steps: []report.CapacityStep{
				{Clients: 64, Class: report.ClassProtected, P95Ms: 2.1, ProxyMemoryPeakMiB: f(40)},
				{Clients: 128, Class: report.ClassProtected, P95Ms: 3.2, ProxyMemoryPeakMiB: f(70)},
				{Clients: 256, Class: report.ClassFailed, OOMKilled: []string{"proxy"}},
			}}}},
		{ID: "uvicorn-2", Capacity: []report.Capacity{{Column: "slow-read", Steps: []report.CapacityStep{{Clients: 1}}},
			{Column: "scale-silent", Path: "direct", Text: "protected up to 10000", Steps: []report.CapacityStep{
				{Clients: 4096, Class: report.ClassProtected, P95Ms: 1.9, AppMemoryPeakMiB: f(60)},
				{Clients: 10000, Class: report.ClassProtected, P95Ms: 2.5, AppMemoryPeakMiB: f(90), SlowOutcomes: map[string]int{"held": 1904, "closed": 8096}},
			}},
			{Column: "scale-read", Path: "direct", Text: "protected up to 256", Steps: []report.CapacityStep{
				{Clients: 128, Class: report.ClassProtected, P95Ms: 1.4, AppMemoryPeakMiB: f(60), ClientCPUPercent: f(1.2)},
				{Clients: 256, Class: report.ClassProtected, P95Ms: 1.5, AppMemoryPeakMiB: f(79)},
			}}}},
	}}
	views := buildScale(m)
	require.Len(t, views, 3, "one per scale column")
	v := views[0]
	require.Empty(t, v.Missing)
	require.Len(t, v.Rows, 2, "only the read column's capacities")
	assert.Equal(t, "gunicorn-sync-2 · nginx-on", v.Rows[0].Setup)
	assert.Contains(t, v.Rows[0].Steps, "256: failed, OOM-killed proxy")
	assert.Equal(t, "the proxy grows 460.8 KiB a client over 10 MiB: its 96 MiB limit at 191.1 clients; measured between 128 and 256 (right)", v.Rows[0].Model)
	assert.Equal(t, "–", v.Rows[1].Model)
	assert.Contains(t, v.Rows[1].Steps, "128: protected, p95 1.4 ms, 60 MiB, client 1.2 % of a core")
	require.Len(t, v.Charts.Figures, 1)
	fig := v.Charts.Figures[0]
	assert.Empty(t, fig.Err)
	assert.True(t, strings.HasPrefix(string(fig.SVG), "<svg"), "a chart is drawn")
	assert.Equal(t, "scale-read", fig.Name)
	require.Len(t, views[1].Rows, 1, "the silent connections' column")
	assert.Contains(t, views[1].Rows[0].Steps, "10000: protected, p95 2.5 ms, 90 MiB, 8096 closed, 1904 held")
	assert.NotEmpty(t, views[2].Missing, "no setup stepped idle connections")
}

func TestLimitsView(t *testing.T) {
	assert.Empty(t, buildLimits(nil))
	rows := buildLimits(&report.Matrix{Limits: []report.LimitCell{{Condition: "limit-uvicorn-limit-concurrency-256",
		Moved: "Uvicorn --limit-concurrency 256", Against: "scale-silent-uvicorn-2-direct-1024", Class: report.ClassFailed,
		P95Ms: 1.2, RunsSound: 1, RunsTotal: 1, RequestsFailed: 72, RequestsTotal: 72, SlowOutcomes: map[string]int{"held": 1024}, ConnectMsMax: 3.5}}})
	require.Len(t, rows, 1)
	assert.Equal(t, "failed: /fast p95 1.2 ms, 72 of 72 /fast requests failed; connections 1024 held; slowest connect 3.5 ms (1 of 1 runs sound)", rows[0].Outcome)
}
