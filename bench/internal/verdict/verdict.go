// Package verdict holds the lab's verdicts as data and evaluates them as
// pure functions of the summaries in package report: article A's
// conditions and article B's throughput rows. Nothing here starts a
// container, so every verdict is unit-tested without Docker.
//
// The data are article A's condition summaries (every matrix like it), the
// sweep's model fit and article B's throughput rows.
//
// A verdict never passes on missing data, nor is it judged on disturbed
// data: one that reads a condition the machine was too busy for says so. Each check declares the
// conditions it reads (Needs, derived from the check itself, never listed
// twice); when one of them did not run at all (go test -run picked
// others), the verdict is not run; when it ran but a value the check reads
// is missing or empty, the verdict fails with the reason.
package verdict

import (
	"fmt"
	"slices"
	"strings"

	"wsgilab/bench/internal/report"
)

// Kind tells a reader what a verdict is about.
type Kind string

const (
	// Article verdicts are what the articles state or infer.
	Article Kind = "article"
	// Harness verdicts check the lab's own instruments: that the pacing,
	// the byte accounting and the load generator measure what they claim.
	Harness Kind = "harness"
	// Lab verdicts are what the lab finds beyond the articles: the sweep,
	// its buffer model, the TCP profiles, the pilot.
	Lab Kind = "lab"
)

// Verdict is one asserted statement with its check.
type Verdict struct {
	// ID is the subtest name under .../claims/.
	ID   string
	Kind Kind
	Text string
	Unit string
	// Check computes the measured value and the verdict.
	Check Check
	// ExpectFails marks a verdict that is meant to fail: an example stack
	// that shows what the lab catches. Its claim says so (Claim.Expected);
	// it fails all the same.
	ExpectFails bool
}

// Check evaluates one verdict on the data.
type Check interface {
	// Needs are the condition ids the check reads.
	Needs() []string
	// Eval returns the outcome, or an error naming the input that is
	// missing or empty.
	Eval(Data) (Outcome, error)
}

// Outcome is a check's measured value, its threshold as text, and whether
// the value meets it.
type Outcome struct {
	Measured  float64
	Threshold string
	Holds     bool
}

// noter is a Check that can say where its figures come from: the
// claim's note.
type noter interface {
	Note(d Data) string
}

// Data is what verdicts read: condition summaries by id (article A's and
// every matrix like it) and article B's throughput rows.
type Data struct {
	Conditions map[string]report.Condition
	Throughput []report.Throughput
	// Sweep is the buffer model's fit on the sweep's cells, nil when the
	// series ran none.
	Sweep *report.Sweep
	// Exhaustion is the temp-file model's fit on the exhaustion table, nil when
	// the series ran none of it.
	Exhaustion *report.Exhaustion
	// TooBusy are the conditions and cells the series could not get an
	// undisturbed run of, with why: their verdicts are not judged.
	TooBusy map[string]string
	// Attempted are the ids of conditions and cells that were started,
	// whether or not they produced anything: one that errored before its
	// first row counts as run, so its verdicts fail as missing data
	// instead of being skipped.
	Attempted []string
}

// ran is whether condition id was started: a summary (even of no run), a
// throughput row, or an attempt.
func (d Data) ran(id string) bool {
	if _, ok := d.Conditions[id]; ok {
		return true
	}
	return slices.Contains(d.Attempted, id) || slices.ContainsFunc(d.Throughput, func(t report.Throughput) bool { return t.ID == id })
}

// Evaluate evaluates every verdict on d, in order.
func Evaluate(vs []Verdict, d Data) []report.Claim {
	out := make([]report.Claim, 0, len(vs))
	for _, v := range vs {
		out = append(out, evaluate(v, d))
	}
	return out
}

func evaluate(v Verdict, d Data) report.Claim {
	c := report.Claim{ID: v.ID, Kind: string(v.Kind), Text: v.Text, Unit: v.Unit, Needs: v.Check.Needs()}
	if v.ExpectFails {
		c.Expected = report.StatusFails
	}
	var notRun []string
	for _, id := range c.Needs {
		if !d.ran(id) {
			notRun = append(notRun, id)
		}
	}
	if len(notRun) > 0 {
		c.Status, c.Note = report.StatusNotRun, "not run: "+strings.Join(notRun, ", ")
		return c
	}
	var busy []string
	for _, id := range c.Needs {
		if why, ok := d.TooBusy[id]; ok {
			busy = append(busy, why)
		}
	}
	if len(busy) > 0 {
		c.Status, c.Note = report.StatusTooBusy, "machine too busy, not judged: "+strings.Join(busy, "; ")
		return c
	}
	o, err := v.Check.Eval(d)
	if err != nil {
		c.Status, c.Note = report.StatusMissing, "missing data: "+err.Error()
		return c
	}
	c.Evaluated, c.Measured, c.Threshold, c.Holds = true, o.Measured, o.Threshold, o.Holds
	if n, ok := v.Check.(noter); ok {
		c.Note = n.Note(d)
	}
	c.Status = report.StatusFails
	if o.Holds {
		c.Status = report.StatusHolds
	}
	return c
}

// Find is the verdict with id in vs.
func Find(vs []Verdict, id string) (Verdict, bool) {
	i := slices.IndexFunc(vs, func(v Verdict) bool { return v.ID == id })
	if i < 0 {
		return Verdict{}, false
	}
	return vs[i], true
}

// Validate checks a verdict table: unique ids, a known kind, a check that
// needs at least one condition.
func Validate(vs []Verdict) error {
	seen := map[string]bool{}
	for _, v := range vs {
		switch {
		case v.ID == "" || seen[v.ID]:
			return fmt.Errorf("verdict: id %q is empty or repeated", v.ID)
		case v.Kind != Article && v.Kind != Harness && v.Kind != Lab:
			return fmt.Errorf("verdict %s: kind %q, want %q, %q or %q", v.ID, v.Kind, Article, Harness, Lab)
		case v.Check == nil || len(v.Check.Needs()) == 0:
			return fmt.Errorf("verdict %s: its check reads no condition", v.ID)
		}
		seen[v.ID] = true
	}
	return nil
}
