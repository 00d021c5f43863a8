package verdict

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"wsgilab/bench/internal/report"
)

// doorSweep is a door's sweep row with /fast p95s by size (4, 8, 12, 16,
// 24 MiB) and the model's boundary for it.
func doorSweep(boundaryMiB float64, lower bool, p95 ...float64) Data {
	row, _ := frontDoorSweepRow("haproxy")
	d := Data{Conditions: map[string]report.Condition{}, Sweep: &report.Sweep{
		Boundaries: []report.Boundary{{Path: "haproxy", Profile: stockProfile, RateBytesPerS: 2 << 20,
			SizeBytes: boundaryMiB * (1 << 20), LowerBound: lower}}}}
	for i, id := range row {
		d.Conditions[id] = report.Condition{ID: id, RunsValid: 1, RunsTotal: 1}
		d.Sweep.Cells = append(d.Sweep.Cells, report.SweepCell{Condition: id, Runs: 1, P95Ms: p95[i]})
	}
	return d
}

// The boundary verdict holds when the boundary splits the row, and fails
// for each way it does not: a cell past it that did not stall, a cell
// under it that did, no cell under it at all.
func TestBoundarySidesCatchesAMisplacedBoundary(t *testing.T) {
	v := FrontDoorBoundaries()[0]
	require.Equal(t, "boundary-haproxy", v.ID)
	for _, tc := range []struct {
		name     string
		boundary float64
		lower    bool
		p95      []float64
		holds    bool
	}{
		{"splits the row (12 MiB too close to call)", 10.6, false, []float64{2, 4, 900, 3700, 7600}, true},
		{"the 12 MiB cell either side: not read", 10.6, false, []float64{2, 4, 2100, 3700, 7600}, true},
		{"a cell past it did not stall", 10.6, false, []float64{2, 4, 2100, 900, 7600}, false},
		{"a cell under it stalled", 10.6, false, []float64{2, 1500, 2100, 3700, 7600}, false},
		{"no cell under it", 3, false, []float64{1200, 1500, 2100, 3700, 7600}, false},
		{"a lower bound past every cell", 27.3, true, []float64{2, 2, 2, 3, 4}, true},
		{"a lower bound, a cell under it stalled", 27.3, true, []float64{2, 2, 2, 3, 1400}, false},
		{"past the row, not a lower bound (Varnish)", 27.0, false, []float64{8, 9, 3, 2, 9}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := v.Check.Eval(doorSweep(tc.boundary, tc.lower, tc.p95...))
			require.NoError(t, err)
			assert.Equal(t, tc.holds, o.Holds, o.Threshold)
			assert.InDelta(t, tc.boundary, o.Measured, 1e-9)
		})
	}
}

// Caddy buffered's row stops at 16 MiB, where its sweep does.
func TestFrontDoorSweepRowStopsAtTheDoorsLimit(t *testing.T) {
	row, sizes := frontDoorSweepRow("caddy-buffered")
	assert.Equal(t, []float64{4, 8, 12, 16}, sizes)
	assert.Equal(t, "matrix-slow-read-gunicorn-sync-2-caddy-buffered", row[3])
	_, sizes = frontDoorSweepRow("haproxy")
	assert.Equal(t, []float64{4, 8, 12, 16, 24}, sizes)
}
