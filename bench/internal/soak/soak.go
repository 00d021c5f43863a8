// Package soak folds several series of the same suite (make soak: the CI
// profile N times back to back) into how often each verdict held and the
// spread of each figure, as a markdown section for reports/measurements.md.
// It reads report directories only.
package soak

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"wsgilab/bench/internal/report"
	"wsgilab/bench/internal/stats"
)

// Verdict is one verdict over the series.
type Verdict struct {
	ID, Kind, Unit, Threshold string
	// Held and Series count the series where it held, and where it ran.
	Held, Series int
	Measured     []float64
	// Statuses counts each status.
	Statuses map[string]int
}

// Figure is one condition's figure over the series.
type Figure struct {
	Name, Unit string
	Values     []float64
}

// Summary is the soak.
type Summary struct {
	Dirs     []string
	Verdicts []Verdict
	Figures  []Figure
	// Machines are each series' machine check (busy or quiet).
	Machines []string
	// Broken are the series that left no claims.json: crashed or timed
	// out before judging anything. Every verdict counts them as not held.
	Broken []string
}

// Read folds the report directories dirs.
func Read(dirs []string) (Summary, error) {
	s := Summary{Dirs: dirs}
	byID := map[string]*Verdict{}
	figures := map[string]*Figure{}
	var order, forder []string
	fig := func(name, unit string, v float64) {
		f := figures[name]
		if f == nil {
			f = &Figure{Name: name, Unit: unit}
			figures[name] = f
			forder = append(forder, name)
		}
		f.Values = append(f.Values, v)
	}
	for _, dir := range dirs {
		var claims []report.Claim
		if err := readJSON(dir, "claims.json", &claims); errors.Is(err, os.ErrNotExist) {
			s.Broken = append(s.Broken, dir)
			continue
		} else if err != nil {
			return s, err
		}
		for _, c := range claims {
			v := byID[c.ID]
			if v == nil {
				v = &Verdict{ID: c.ID, Kind: c.Kind, Unit: c.Unit, Statuses: map[string]int{}}
				byID[c.ID] = v
				order = append(order, c.ID)
			}
			v.Statuses[c.Status]++
			if c.Status == report.StatusNotRun {
				continue
			}
			v.Series++
			v.Threshold = c.Threshold
			if c.Holds {
				v.Held++
			}
			if c.Evaluated {
				v.Measured = append(v.Measured, c.Measured)
			}
		}
		var conds []report.Condition
		if err := readJSON(dir, "conditions.json", &conds); err != nil && !errors.Is(err, os.ErrNotExist) {
			return s, err
		}
		for _, c := range conds {
			if c.RunsValid > 0 {
				fig(c.ID+" p95", "ms", c.P95Ms)
			}
		}
		var rows []report.Throughput
		if err := readJSON(dir, "throughput.json", &rows); err != nil && !errors.Is(err, os.ErrNotExist) {
			return s, err
		}
		for _, r := range rows {
			if r.Generator == "ours" {
				fig(r.ID+" req/s", "req/s", r.ReqPerS)
			}
		}
		var env report.Environment
		if err := readJSON(dir, "environment.json", &env); err == nil {
			m := "quiet"
			if env.Machine.Busy != "" {
				m = "busy: " + env.Machine.Busy
			}
			line := fmt.Sprintf("%s: %s, steal %.1f %%, one core %.0f MB/s", filepath.Base(dir), m,
				100*env.Machine.StealShare, env.Machine.CalibrationMBps)
			if sf := env.Safety; sf.Enabled {
				line += fmt.Sprintf("; CPU outside the lab during the series: max %.0f %%, mean %.1f %% (%d samples), %d run(s) discarded by the safety stop",
					100*sf.MaxShare, 100*sf.MeanShare, sf.Samples, len(sf.Aborts))
			}
			s.Machines = append(s.Machines, line)
		}
	}
	for _, id := range order {
		v := byID[id]
		v.Series += len(s.Broken)
		s.Verdicts = append(s.Verdicts, *v)
	}
	for _, n := range forder {
		s.Figures = append(s.Figures, *figures[n])
	}
	return s, nil
}

func readJSON(dir, name string, v any) error {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("soak: %s: %w", filepath.Join(dir, name), err)
	}
	return nil
}

// Markdown is a report.Reporter of the summary as a markdown section.
func (s Summary) Markdown(w io.Writer) error {
	fmt.Fprintf(w, "%s\n\n", Begin)
	fmt.Fprintf(w, "## Soak: %d series of the CI profile, back to back (`make soak`)\n\n", len(s.Dirs))
	for _, m := range s.Machines {
		fmt.Fprintf(w, "- %s\n", m)
	}
	for _, b := range s.Broken {
		fmt.Fprintf(w, "- %s: **no claims.json**, the series crashed or timed out; every verdict counts it as not held\n", filepath.Base(b))
	}
	fmt.Fprintf(w, "\n| verdict | kind | held | threshold | measured: min – median – max |\n|---|---|---|---|---|\n")
	for _, v := range s.Verdicts {
		held := fmt.Sprintf("%d/%d", v.Held, v.Series)
		if v.Held < v.Series {
			held = "**" + held + "**"
		}
		fmt.Fprintf(w, "| `%s` | %s | %s | %s %s | %s |\n", v.ID, v.Kind, held, v.Threshold, v.Unit, spread(v.Measured))
	}
	fmt.Fprintf(w, "\n| figure | min – median – max |\n|---|---|\n")
	for _, f := range s.Figures {
		fmt.Fprintf(w, "| %s | %s %s |\n", f.Name, spread(f.Values), f.Unit)
	}
	fmt.Fprintf(w, "\n%s\n", End)
	return nil
}

func spread(xs []float64) string {
	if len(xs) == 0 {
		return "–"
	}
	lo, hi := stats.Range(xs)
	return fmt.Sprintf("%.4g – %.4g – %.4g", lo, stats.Median(slices.Clone(xs)), hi)
}

// The markers around the soak's section in reports/measurements.md.
const (
	Begin = "<!-- soak:begin (written by make soak) -->"
	End   = "<!-- soak:end -->"
)

// Splice replaces the section between Begin and End in doc with section,
// or appends it when doc has none.
func Splice(doc, section string) string {
	i, j := strings.Index(doc, Begin), strings.Index(doc, End)
	if i < 0 || j < i {
		return strings.TrimRight(doc, "\n") + "\n\n" + section
	}
	return doc[:i] + strings.TrimRight(section, "\n") + doc[j+len(End):]
}
