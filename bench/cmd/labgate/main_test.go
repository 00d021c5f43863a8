package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// bench writes a benchmark file of n samples of one cell's p95.
func bench(t *testing.T, p95 ...float64) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("goos: linux\ngoarch: amd64\npkg: wsgilab/bench\n")
	for i, v := range p95 {
		fmt.Fprintf(&b, "BenchmarkArticleA/direct-2dl \t1\t%d ns/op\t%g p95-ms\n", 10_000_000_000+i, v)
	}
	p := filepath.Join(t.TempDir(), "bench.txt")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// labgate's own exit codes tell a regression (1) from an undecided
// comparison or a bad file (2), as make gate cannot (its 2 is any
// failure): the example workflow calls labgate for that.
func TestExitCodes(t *testing.T) {
	th := filepath.Join("..", "..", "..", "fixtures", "gate", "thresholds.yaml")
	quiet := []float64{97, 98, 99, 100, 100, 101, 102, 103}
	worse := []float64{146, 147, 148, 150, 150, 151, 152, 153}
	for _, tc := range []struct {
		name      string
		base, new []float64
		args      []string
		want      int
	}{
		{"unchanged", quiet, quiet, nil, exitPass},
		{"p95 up 50 %", quiet, worse, nil, exitFail},
		{"too few samples", quiet[:3], worse[:3], nil, exitUndecided},
		{"bad argument", quiet, quiet, []string{"-what"}, exitUndecided},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"-base", bench(t, tc.base...), "-new", bench(t, tc.new...), "-thresholds", th}, tc.args...)
			var out, errs strings.Builder
			assert.Equal(t, tc.want, run(args, &out, &errs), "stdout:\n%s\nstderr:\n%s", out.String(), errs.String())
		})
	}
	var out, errs strings.Builder
	assert.Equal(t, exitUndecided, run([]string{"-base", "/nonexistent", "-new", "/nonexistent", "-thresholds", th}, &out, &errs), "a missing file")
}
