package stats

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestNearestRankIsTheArticles(t *testing.T) {
	// 72 values 1..72: p95 is the ceil(0.95*72) = 69th.
	xs := make([]int64, 72)
	for i := range xs {
		xs[71-i] = int64(i + 1) // unsorted on purpose
	}
	assert.EqualValues(t, 69, NearestRank(xs, 0.95))
	assert.EqualValues(t, 36, NearestRank(xs, 0.50))
	assert.EqualValues(t, 72, NearestRank(xs, 1))
	assert.EqualValues(t, 1, NearestRank(xs, 0))
	assert.EqualValues(t, 0, NearestRank([]int64{}, 0.95))
}

func TestMedianAndRange(t *testing.T) {
	assert.Equal(t, 2.0, Median([]float64{3, 1, 2}))
	assert.Equal(t, 2.5, Median([]float64{4, 1, 2, 3}))
	lo, hi := Range([]float64{3, 1, 2})
	assert.Equal(t, []float64{1, 3}, []float64{lo, hi})
}

func TestLatencies(t *testing.T) {
	var l Latencies
	for i := 1; i <= 100; i++ {
		l.Add(time.Duration(i) * time.Millisecond)
	}
	l.Close()
	assert.Equal(t, 100, l.Count)
	assert.Equal(t, 95*time.Millisecond, l.P95)
	assert.Equal(t, 100*time.Millisecond, l.Max)
	assert.Equal(t, 1.5, Ms(1500*time.Microsecond))
}
