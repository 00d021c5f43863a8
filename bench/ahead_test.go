package bench

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"wsgilab/bench/internal/engine"
	"wsgilab/bench/internal/labrun"
)

// assertPodsAhead is TestArticleA/pods-ahead: over every record the
// series has so far (kept runs and discarded attempts), no pod opened
// ahead (Lab.Then) was asked for while another run's load window was
// open: the fault pods ahead must never have (labrun.CheckAhead). And,
// when this process kept two runs or more from the time the test began
// (since), at least one of the records since had its pod opened ahead,
// or nothing was gained. It reads the series' raw records in the report
// directory.
func assertPodsAhead(t *testing.T, since time.Time) {
	recs, ran := seriesRecords(t, lab.Reports.Dir(), since)
	if ran < 2 {
		t.Skipf("%d run kept by this process: no pod could be opened ahead", ran)
	}
	ahead, err := labrun.CheckAhead(recs, since)
	assert.NoError(t, err)
	assert.NotZero(t, ahead, "none of the %d runs kept since %s had its pod opened ahead", ran, since.Format(time.TimeOnly))
	t.Logf("%d records since the test began had their pod opened ahead (%d runs kept); none of %d was asked for during another run's window",
		ahead, ran, len(recs))
}

// seriesRecords are the raw records in dir's raw/ and raw/discarded/, and
// how many of the kept ones (raw/) began at or after since.
func seriesRecords(t *testing.T, dir string, since time.Time) ([]engine.Record, int) {
	t.Helper()
	var recs []engine.Record
	ran := 0
	for i, pattern := range []string{filepath.Join(dir, "raw", "*.json"), filepath.Join(dir, "raw", "discarded", "*.json")} {
		paths, err := filepath.Glob(pattern)
		require.NoError(t, err)
		for _, p := range paths {
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			var r engine.Record
			require.NoError(t, json.Unmarshal(b, &r), p)
			recs = append(recs, r)
			if i == 0 && !r.Started.Before(since) {
				ran++
			}
		}
	}
	return recs, ran
}
