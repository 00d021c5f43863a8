package gate

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The repository's thresholds file is valid and gates every unit the
// lab's benchmarks report (read from their ReportMetric calls), but
// lag-max-ms: the prober's own schedule lag, an instrument's figure, not
// the server's.
func TestRepositoryThresholds(t *testing.T) {
	th, err := LoadThresholds("../../../fixtures/gate/thresholds.yaml")
	require.NoError(t, err)
	files, err := filepath.Glob("../../*_test.go")
	require.NoError(t, err)
	metric := regexp.MustCompile(`ReportMetric\([^\n]*, "([^"]+)"\)`)
	seen := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, m := range metric.FindAllSubmatch(b, -1) {
			seen++
			if u := string(m[1]); u != "lag-max-ms" {
				assert.Contains(t, th.Units, u, "%s reports %s", f, u)
			}
		}
	}
	assert.Greater(t, seen, 10, "the benchmarks' metrics were found")
}
