package engine

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"wsgilab/bench/internal/report"
)

func testFingerprint(runs int) Fingerprint {
	return NewFingerprint("wsgilab:abc", "wsgilab-base:def", Settings{Runs: runs, Profile: "ci"},
		Host{CPUModel: "EPYC", CPUs: 2, Kernel: "6.18", Docker: "20.10"})
}

// A fresh series leaves an old journal alone until its first unit, then
// replaces it; a resumed one gives each earlier unit back once, and never
// one it completed itself; a complete journal is not resumed.
func TestJournalFreshResumeComplete(t *testing.T) {
	dir := t.TempDir()
	off, _, err := OpenJournal(dir, testFingerprint(3), JournalOff)
	require.NoError(t, err)
	assert.Nil(t, off, "make test keeps no journal")

	j, res, err := OpenJournal(dir, testFingerprint(3), JournalResume)
	require.NoError(t, err)
	assert.False(t, res.Resumed)
	require.NoError(t, j.Save("b/cell-one", map[string]int{"x": 1}))
	require.NoError(t, j.Save(JournalAborts, []report.Abort{{Unit: "b/cell-zero", Attempt: 1}}))
	var v map[string]int
	ok, err := j.Load("b/cell-one", &v)
	require.NoError(t, err)
	assert.False(t, ok, "a unit of this process was handed back to it")

	j, res, err = OpenJournal(dir, testFingerprint(3), JournalResume)
	require.NoError(t, err)
	assert.True(t, res.Resumed)
	assert.Equal(t, []string{"b/cell-one"}, res.Kept)
	assert.Equal(t, []report.Abort{{Unit: "b/cell-zero", Attempt: 1}}, j.Aborts(), "the resumed series' aborts")
	ok, err = j.Load("b/cell-one", &v)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, map[string]int{"x": 1}, v)
	ok, _ = j.Load("b/cell-one", &v)
	assert.False(t, ok, "given back twice")
	assert.Equal(t, []string{"b/cell-one"}, j.Kept())

	fresh, _, err := OpenJournal(dir, testFingerprint(5), JournalFresh)
	require.NoError(t, err)
	assert.FileExists(t, filepath.Join(dir, "journal/b/cell-one.json"), "a process that ran nothing removed the journal")
	require.NoError(t, fresh.Save("b/cell-two", 2))
	assert.NoFileExists(t, filepath.Join(dir, "journal/b/cell-one.json"))

	require.NoError(t, fresh.Complete())
	again, res, err := OpenJournal(dir, testFingerprint(3), JournalResume)
	require.NoError(t, err, "a complete journal of another fingerprint was refused")
	assert.False(t, res.Resumed, "a complete series was resumed")
	ok, _ = again.Load("b/cell-two", new(int))
	assert.False(t, ok)
}

// A unit cut short (undecodable) is run again, not fatal.
func TestJournalDropsUndecodableUnit(t *testing.T) {
	dir := t.TempDir()
	j, _, err := OpenJournal(dir, testFingerprint(3), JournalFresh)
	require.NoError(t, err)
	require.NoError(t, j.Save("b/cell", 1))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "journal/b/cell.json"), nil, 0o644))
	j, _, err = OpenJournal(dir, testFingerprint(3), JournalResume)
	require.NoError(t, err)
	ok, err := j.Load("b/cell", new(int))
	assert.NoError(t, err)
	assert.False(t, ok)
}

func TestJournalRefusesAnotherFingerprint(t *testing.T) {
	dir := t.TempDir()
	j, _, err := OpenJournal(dir, testFingerprint(3), JournalFresh)
	require.NoError(t, err)
	require.NoError(t, j.Save("b/cell", 1))
	_, _, err = OpenJournal(dir, testFingerprint(2), JournalResume)
	require.ErrorIs(t, err, ErrFingerprint)
	assert.Contains(t, err.Error(), "it differs from this series in runs (journal 3, now 2);")
	assert.Contains(t, err.Error(), "make repro FRESH=1")
	other := NewFingerprint("wsgilab:other", "wsgilab-base:def", Settings{Runs: 3, Profile: "ci"},
		Host{CPUModel: "Xeon", CPUs: 2, Kernel: "6.18", Docker: "20.10"})
	_, _, err = OpenJournal(dir, other, JournalResume)
	assert.ErrorContains(t, err, `host (journal {"cpu_model":"EPYC"`)
	assert.ErrorContains(t, err, "; lab_image (journal \"wsgilab:abc\", now \"wsgilab:other\"); article_a; article_b;")
}

// A journalled file that changed since is refused, not taken for the unit.
func TestJournalFileRef(t *testing.T) {
	dir := t.TempDir()
	j, _, err := OpenJournal(dir, testFingerprint(3), JournalFresh)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "raw"), 0o755))
	raw := filepath.Join(dir, "raw/c-run1.json")
	require.NoError(t, os.WriteFile(raw, []byte(`{"run":1}`), 0o644))
	require.NoError(t, j.SaveFile("a/c-run1", "raw/c-run1.json"))

	j, _, err = OpenJournal(dir, testFingerprint(3), JournalResume)
	require.NoError(t, err)
	var rec struct{ Run int }
	ok, err := j.LoadFile("a/c-run1", &rec)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, 1, rec.Run)

	require.NoError(t, os.WriteFile(raw, []byte(`{"run":2}`), 0o644))
	j, _, err = OpenJournal(dir, testFingerprint(3), JournalResume)
	require.NoError(t, err)
	_, err = j.LoadFile("a/c-run1", &rec)
	assert.ErrorContains(t, err, "raw/c-run1.json changed or vanished")
}
