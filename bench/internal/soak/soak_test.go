package soak

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"wsgilab/bench/internal/report"
)

// series writes a report directory holding claims.
func series(t *testing.T, claims ...report.Claim) string {
	dir := t.TempDir()
	b, err := json.Marshal(claims)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "claims.json"), b, 0o644))
	return dir
}

func TestReadCountsHeldAndSpread(t *testing.T) {
	held := report.Claim{ID: "x", Kind: "article", Status: report.StatusHolds, Holds: true, Evaluated: true, Measured: 2, Threshold: "< 10", Unit: "ms"}
	failed := held
	failed.Status, failed.Holds, failed.Measured = report.StatusFails, false, 12
	missing := report.Claim{ID: "x", Kind: "article", Status: report.StatusMissing}
	notRun := report.Claim{ID: "x", Kind: "article", Status: report.StatusNotRun}
	s, err := Read([]string{series(t, held), series(t, failed), series(t, missing), series(t, notRun), series(t, held)})
	require.NoError(t, err)
	require.Len(t, s.Verdicts, 1)
	v := s.Verdicts[0]
	assert.Equal(t, 2, v.Held)
	assert.Equal(t, 4, v.Series, "a series where it did not run does not count; one with missing data does")
	assert.Equal(t, []float64{2, 12, 2}, v.Measured)

	var b bytes.Buffer
	require.NoError(t, s.Markdown(&b))
	assert.Contains(t, b.String(), "| `x` | article | **2/4** | < 10 ms | 2 – 2 – 12 |")
}

func TestReadNamesABrokenFile(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "claims.json"), []byte("{"), 0o644))
	_, err := Read([]string{dir})
	assert.ErrorContains(t, err, filepath.Join(dir, "claims.json"))
}

func TestSplice(t *testing.T) {
	doc := "# M\n\ntext\n"
	once := Splice(doc, Begin+"\none\n"+End+"\n")
	assert.Equal(t, "# M\n\ntext\n\n"+Begin+"\none\n"+End+"\n", once)
	twice := Splice(once, Begin+"\ntwo\n"+End+"\n")
	assert.Equal(t, 1, strings.Count(twice, Begin))
	assert.Contains(t, twice, "two")
	assert.NotContains(t, twice, "one")
}

// A series that crashed before judging anything counts against every
// verdict: it is what a soak is for.
func TestBrokenSeriesCounts(t *testing.T) {
	held := report.Claim{ID: "x", Kind: "article", Status: report.StatusHolds, Holds: true, Evaluated: true, Measured: 2}
	s, err := Read([]string{series(t, held), t.TempDir()})
	require.NoError(t, err)
	require.Len(t, s.Broken, 1)
	assert.Equal(t, 1, s.Verdicts[0].Held)
	assert.Equal(t, 2, s.Verdicts[0].Series)
}
