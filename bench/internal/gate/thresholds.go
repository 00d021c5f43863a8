// Package gate is the lab's regression gate: it compares two Go benchmark
// files (make bench's output) with golang.org/x/perf's benchfmt and
// benchmath, and fails only on a change that is both significant (a
// Mann-Whitney U test, as benchstat's) and beyond a per-unit threshold in
// the worse direction. It never passes on missing data: a benchmark and
// unit of the base file that the new file lacks fails the gate.
package gate

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"slices"

	"go.yaml.in/yaml/v3"
)

// Default* are the thresholds' defaults.
const (
	// DefaultAlpha is the significance level, benchstat's.
	DefaultAlpha = 0.05
	// MaxPercent bounds a unit's threshold: a change of more than 1000 %
	// is no threshold at all.
	MaxPercent = 1000
)

// Worse directions of a unit.
const (
	Higher = "higher" // a larger value is worse (latency, failures)
	Lower  = "lower"  // a smaller value is worse (throughput)
)

// Thresholds is the gate's thresholds file: which units it gates, which
// way is worse, and by how much a significant change may move.
type Thresholds struct {
	// Alpha is the U test's significance level, above 0 and below 0.5;
	// 0 is DefaultAlpha.
	Alpha float64 `yaml:"alpha"`
	// Units maps a benchmark unit ("p95-ms", "req/s", as the benchmark
	// file spells it) to its rule. Units not listed are shown, not gated.
	Units map[string]Rule `yaml:"units"`
}

// Rule gates one unit.
type Rule struct {
	// Worse is Higher or Lower.
	Worse string `yaml:"worse"`
	// Percent is the largest accepted change of the median in the worse
	// direction, in percent of the base's median: above 0, at most
	// MaxPercent.
	Percent float64 `yaml:"percent"`
}

// LoadThresholds reads a thresholds file strictly: unknown keys, a second
// document and malformed rules are errors naming the field, the value
// and what is accepted.
func LoadThresholds(path string) (Thresholds, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Thresholds{}, fmt.Errorf("gate: thresholds: %w", err)
	}
	t, err := ParseThresholds(b)
	if err != nil {
		return Thresholds{}, fmt.Errorf("gate: thresholds %s: %w", path, err)
	}
	return t, nil
}

// ParseThresholds decodes and validates a thresholds file's bytes.
func ParseThresholds(b []byte) (Thresholds, error) {
	var t Thresholds
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&t); err != nil {
		return Thresholds{}, err
	}
	var extra any
	if err := dec.Decode(&extra); err == nil {
		return Thresholds{}, fmt.Errorf("a second YAML document: want one")
	}
	return t, t.Validate()
}

// Validate names the first malformed field, its value and what is accepted.
func (t Thresholds) Validate() error {
	if !(t.Alpha >= 0 && t.Alpha < 0.5) { // NaN too
		return fmt.Errorf("alpha %g: want above 0 and below 0.5 (0: %g)", t.Alpha, DefaultAlpha)
	}
	if len(t.Units) == 0 {
		return fmt.Errorf("units: empty: want at least one unit, e.g. p95-ms: {worse: higher, percent: 20}")
	}
	for _, u := range slices.Sorted(maps.Keys(t.Units)) {
		r := t.Units[u]
		if r.Worse != Higher && r.Worse != Lower {
			return fmt.Errorf("units.%s.worse %q: want %q or %q", u, r.Worse, Higher, Lower)
		}
		if !(r.Percent > 0 && r.Percent <= MaxPercent) { // NaN too
			return fmt.Errorf("units.%s.percent %g: want above 0 and at most %d", u, r.Percent, MaxPercent)
		}
	}
	return nil
}

func (t Thresholds) alpha() float64 {
	if t.Alpha == 0 {
		return DefaultAlpha
	}
	return t.Alpha
}
