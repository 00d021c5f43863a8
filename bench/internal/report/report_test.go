package report

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWriteFileIsAtomic(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, WriteFile(dir, "a.json", JSON(map[string]int{"x": 1})))
	b, err := os.ReadFile(filepath.Join(dir, "a.json"))
	require.NoError(t, err)
	assert.JSONEq(t, `{"x":1}`, string(b))

	// A failing reporter leaves the previous file whole and no temp file.
	err = WriteFile(dir, "a.json", func(w io.Writer) error {
		io.WriteString(w, `{"half`)
		return errors.New("boom")
	})
	require.ErrorContains(t, err, "boom")
	b, _ = os.ReadFile(filepath.Join(dir, "a.json"))
	assert.JSONEq(t, `{"x":1}`, string(b))
	entries, _ := os.ReadDir(dir)
	assert.Len(t, entries, 1)
}
