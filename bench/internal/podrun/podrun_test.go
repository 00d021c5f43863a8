package podrun

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestReadEnv(t *testing.T) {
	dir := t.TempDir()
	table := filepath.Join(dir, "runs.json")
	b, err := json.Marshal([]Entry{{Index: 0, Condition: "direct-0dl", Run: 1}, {Index: 1, Condition: "direct-0dl", Run: 2}})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(table, b, 0o644))

	e, err := ReadEnv(env(map[string]string{EnvTable: table, EnvIndex: "1", EnvShared: dir}))
	require.NoError(t, err)
	assert.Equal(t, Entry{Index: 1, Condition: "direct-0dl", Run: 2}, e.Entry)
	assert.Equal(t, dir, e.Shared)

	_, err = ReadEnv(env(map[string]string{EnvTable: table, EnvIndex: "2", EnvShared: dir}))
	assert.ErrorContains(t, err, "has no entry 2 (it has 2)")
	// Every missing setting is named at once.
	_, err = ReadEnv(env(map[string]string{EnvIndex: "x"}))
	require.Error(t, err)
	for _, want := range []string{"LAB_SHARED is not set", `JOB_COMPLETION_INDEX="x": want the Indexed Job's completion index`, `LAB_RUN_TABLE="": want the run table`} {
		assert.ErrorContains(t, err, want)
	}
}

func TestLastLines(t *testing.T) {
	assert.Equal(t, "c\nd\n", lastLines("a\nb\nc\nd\n", 2))
	assert.Equal(t, "a\nb", lastLines("a\nb", 5))
}
