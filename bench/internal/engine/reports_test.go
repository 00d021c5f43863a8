package engine

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"wsgilab/bench/internal/load"
	"wsgilab/bench/internal/report"
)

// fakeRecord is run k of c with n /fast requests, no sampler.
func fakeRecord(c Condition, k, n int) Record {
	rec := Record{Condition: c.ID, Run: k, Started: time.Now().Add(-10 * time.Second), WallS: 10}
	rec.Load.Spec.FastBodyBytes = load.AnyLength
	for i := range n {
		rec.Load.Fast = append(rec.Load.Fast, load.FastRequest{Seq: i, Latency: time.Millisecond, Status: 200})
	}
	rec.Load.Elapsed = 9 * time.Second
	return rec
}

func lines(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	n := 0
	for sc := bufio.NewScanner(f); sc.Scan(); {
		n++
	}
	return n
}

// A run's rows are appended as it is added; the summary files come with
// Flush, once, and a Reports that starts on a used directory starts its
// JSON-lines files afresh (a resumed series adds its kept runs again).
func TestReportsAppendThenFlush(t *testing.T) {
	dir := t.TempDir()
	c := ArticleA[0]
	r := NewReports(dir, &report.Environment{})
	for k := 1; k <= 3; k++ {
		_, err := r.AddRun(c, fakeRecord(c, k, 72))
		require.NoError(t, err)
		assert.Equal(t, 72*k, lines(t, filepath.Join(dir, "requests.jsonl")), "appended at once")
		assert.FileExists(t, filepath.Join(dir, RawA(c, k)))
	}
	assert.NoFileExists(t, filepath.Join(dir, "runs.json"), "summaries wait for Flush")
	require.NoError(t, r.Flush())
	var runs []report.Run
	readJSONFile(t, filepath.Join(dir, "runs.json"), &runs)
	assert.Len(t, runs, 3)
	assert.Len(t, r.Runs(c.ID), 3, "the series' runs of c, before and after Flush")
	assert.Empty(t, r.Runs(ArticleA[1].ID))
	info, err := os.Stat(filepath.Join(dir, "runs.json"))
	require.NoError(t, err)
	require.NoError(t, r.Flush())
	again, err := os.Stat(filepath.Join(dir, "runs.json"))
	require.NoError(t, err)
	assert.Equal(t, info.ModTime(), again.ModTime(), "a flush with no new run writes nothing")

	r2 := NewReports(dir, &report.Environment{})
	_, err = r2.AddRun(c, fakeRecord(c, 1, 72))
	require.NoError(t, err)
	assert.Equal(t, 72, lines(t, filepath.Join(dir, "requests.jsonl")), "a new series' first run starts the file afresh")
	require.NoError(t, r2.Close())
	readJSONFile(t, filepath.Join(dir, "runs.json"), &runs)
	assert.Len(t, runs, 1, "Close flushes")
}

// BenchmarkReportsAddRun adds runs of 72 requests to a series of
// -benchtime runs, flushing every 3 as a series does per condition: the
// bytes written per run stay flat as the series grows (they grew with its
// length when every run rewrote every file).
func BenchmarkReportsAddRun(b *testing.B) {
	c := ArticleA[0]
	for _, size := range []int{50, 400} {
		b.Run(fmt.Sprintf("series-%d", size), func(b *testing.B) {
			for range b.N {
				dir := b.TempDir()
				r := NewReports(dir, &report.Environment{})
				start := time.Now()
				for k := 1; k <= size; k++ {
					if _, err := r.AddRun(c, fakeRecord(c, k, 72)); err != nil {
						b.Fatal(err)
					}
					if k%3 == 0 {
						if err := r.Flush(); err != nil {
							b.Fatal(err)
						}
					}
				}
				b.ReportMetric(float64(time.Since(start).Microseconds())/float64(size), "us/run")
			}
		})
	}
}

func readJSONFile(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, v))
}
