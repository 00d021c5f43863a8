package engine

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func testFingerprint(runs int) Fingerprint {
	return NewFingerprint("wsgilab:abc", "wsgilab-base:def", Settings{Runs: runs, Profile: "ci"})
}

// A fresh series leaves an old journal alone until its first unit, then
// replaces it; a resumed one gives each earlier unit back once, and never
// one it completed itself.
func TestJournalFreshAndResume(t *testing.T) {
	dir := t.TempDir()
	j, res, err := OpenJournal(dir, testFingerprint(3), true)
	require.NoError(t, err)
	assert.False(t, res.Resumed)
	require.NoError(t, j.save("b/cell-one", map[string]int{"x": 1}))
	var v map[string]int
	ok, err := j.load("b/cell-one", &v)
	require.NoError(t, err)
	assert.False(t, ok, "a unit of this process was handed back to it")

	j, res, err = OpenJournal(dir, testFingerprint(3), true)
	require.NoError(t, err)
	assert.True(t, res.Resumed)
	assert.Equal(t, []string{"b/cell-one"}, res.Kept)
	ok, err = j.load("b/cell-one", &v)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, map[string]int{"x": 1}, v)
	ok, _ = j.load("b/cell-one", &v)
	assert.False(t, ok, "given back twice")
	assert.Equal(t, []string{"b/cell-one"}, j.Kept())

	fresh, _, err := OpenJournal(dir, testFingerprint(5), false)
	require.NoError(t, err)
	assert.FileExists(t, filepath.Join(dir, "journal/b/cell-one.json"), "a process that ran nothing removed the journal")
	require.NoError(t, fresh.save("b/cell-two", 2))
	assert.NoFileExists(t, filepath.Join(dir, "journal/b/cell-one.json"))
}

func TestJournalRefusesAnotherFingerprint(t *testing.T) {
	dir := t.TempDir()
	j, _, err := OpenJournal(dir, testFingerprint(3), false)
	require.NoError(t, err)
	require.NoError(t, j.save("b/cell", 1))
	_, _, err = OpenJournal(dir, testFingerprint(2), true)
	require.ErrorIs(t, err, ErrFingerprint)
	assert.Contains(t, err.Error(), "it differs from this series in runs;")
	assert.Contains(t, err.Error(), "make repro FRESH=1")
	other := testFingerprint(3)
	other.LabImage = "wsgilab:other"
	_, _, err = OpenJournal(dir, other, true)
	assert.ErrorContains(t, err, "it differs from this series in lab_image;")
}

// A journalled file that changed since is refused, not taken for the unit.
func TestJournalFileRef(t *testing.T) {
	dir := t.TempDir()
	j, _, err := OpenJournal(dir, testFingerprint(3), false)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "raw"), 0o755))
	raw := filepath.Join(dir, "raw/c-run1.json")
	require.NoError(t, os.WriteFile(raw, []byte(`{"run":1}`), 0o644))
	require.NoError(t, j.saveFile("a/c-run1", "raw/c-run1.json"))

	j, _, err = OpenJournal(dir, testFingerprint(3), true)
	require.NoError(t, err)
	var rec struct{ Run int }
	ok, err := j.loadFile("a/c-run1", &rec)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, 1, rec.Run)

	require.NoError(t, os.WriteFile(raw, []byte(`{"run":2}`), 0o644))
	j, _, err = OpenJournal(dir, testFingerprint(3), true)
	require.NoError(t, err)
	_, err = j.loadFile("a/c-run1", &rec)
	assert.ErrorContains(t, err, "raw/c-run1.json changed or vanished")
}
