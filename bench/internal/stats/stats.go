// Package stats holds the lab's statistics: nearest-rank quantiles as the
// article computed them, and medians over runs.
package stats

import (
	"math"
	"slices"
	"time"
)

// NearestRank is the p-quantile of xs by nearest rank: the ceil(p*n)-th
// smallest value (p95 of 72 values is the 69th). Zero for no values.
func NearestRank[T ~int64 | ~float64](xs []T, p float64) T {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	rank := int(math.Ceil(p * float64(len(s))))
	return s[min(max(rank, 1), len(s))-1]
}

// Median is the middle value, or the mean of the two middle ones.
func Median[T ~int64 | ~float64](xs []T) T {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Range is the smallest and largest value.
func Range[T ~int64 | ~float64](xs []T) (lo, hi T) {
	if len(xs) == 0 {
		return 0, 0
	}
	return slices.Min(xs), slices.Max(xs)
}

// Latencies aggregates durations: Add each, then Close to compute.
type Latencies struct {
	values []time.Duration
	// Filled by Close.
	Count int           `json:"count"`
	P50   time.Duration `json:"p50_ns"`
	P95   time.Duration `json:"p95_ns"`
	P99   time.Duration `json:"p99_ns"`
	Max   time.Duration `json:"max_ns"`
}

// Add records one value.
func (l *Latencies) Add(d time.Duration) { l.values = append(l.values, d) }

// Close computes the quantiles of what was added.
func (l *Latencies) Close() {
	l.Count = len(l.values)
	l.P50 = NearestRank(l.values, 0.50)
	l.P95 = NearestRank(l.values, 0.95)
	l.P99 = NearestRank(l.values, 0.99)
	if l.Count > 0 {
		l.Max = slices.Max(l.values)
	}
}

// Ms is d in milliseconds.
func Ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Sec is d in seconds.
func Sec(d time.Duration) float64 { return d.Seconds() }
