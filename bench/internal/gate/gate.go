package gate

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"text/tabwriter"

	"golang.org/x/perf/benchfmt"
	"golang.org/x/perf/benchmath"
)

// Verdict is one row's outcome.
type Verdict string

const (
	// Pass: not significant and within the threshold, or significant and
	// within it, or a change in the better direction.
	Pass Verdict = "ok"
	// Better: a significant change beyond the threshold, in the better
	// direction. It never fails the gate.
	Better Verdict = "better"
	// Regression: a significant change beyond the threshold in the worse
	// direction. It fails the gate.
	Regression Verdict = "REGRESSION"
	// Noisy: the medians moved beyond the threshold in the worse
	// direction, but the samples overlap too much to call it a change (p
	// at or above alpha). It does not fail the gate: noise is not a
	// regression; the row says so, and how many samples would settle it.
	Noisy Verdict = "noisy"
	// Missing: the base has this benchmark and unit, the new file has no
	// value of it. It fails the gate: missing data never passes.
	Missing Verdict = "MISSING"
	// TooFew: a gated row whose samples are too few for the U test ever
	// to reach alpha (3 a side cannot reach 0.05). It fails nothing and
	// passes nothing: the gate cannot decide, and says so (Undecided).
	TooFew Verdict = "TOO-FEW"
	// Ungated: the unit has no rule in the thresholds file.
	Ungated Verdict = "-"
)

// Row compares one benchmark's unit.
type Row struct {
	// Name is the benchmark's name without its GOMAXPROCS suffix.
	Name, Unit  string
	Base, New   benchmath.Summary
	NBase, NNew int
	// P is the U test's p-value; 1 when there is nothing to compare.
	P float64
	// ChangePct is the new median's change from the base's, in percent.
	ChangePct float64
	// LimitPct is the rule's threshold, signed in the worse direction; 0
	// for an ungated unit.
	LimitPct float64
	Verdict  Verdict
	// Note says what stops a verdict (too few samples, the test's
	// warnings), empty when nothing does.
	Note string
}

// Report is a whole comparison.
type Report struct {
	Alpha float64
	Rows  []Row
}

// Failed is true when any row is a regression or missing.
func (r Report) Failed() bool {
	return slices.ContainsFunc(r.Rows, func(x Row) bool { return x.Verdict == Regression || x.Verdict == Missing })
}

// Undecided is true when a gated row has too few samples to decide: the
// gate can then neither pass nor fail the change.
func (r Report) Undecided() bool {
	return slices.ContainsFunc(r.Rows, func(x Row) bool { return x.Verdict == TooFew })
}

// CompareFiles reads two benchmark files and compares them under t.
func CompareFiles(basePath, newPath string, t Thresholds) (Report, error) {
	base, err := readFile(basePath)
	if err != nil {
		return Report{}, err
	}
	nw, err := readFile(newPath)
	if err != nil {
		return Report{}, err
	}
	return Compare(base, nw, t), nil
}

// Samples are a benchmark file's values by benchmark name (without the
// GOMAXPROCS suffix) and unit.
type Samples map[key][]float64

type key struct{ name, unit string }

// Read parses a benchmark file with benchfmt; a file with no benchmark
// line is an error (an empty base or new file must not pass). Names keep
// a trailing "-N" unless every name of the file ends in the same one,
// which is then go test's GOMAXPROCS suffix and is dropped, so files from
// machines of other core counts compare; a name such as
// "stack-shop-sync-slow-read-2" keeps its step.
func Read(r io.Reader, fileName string) (Samples, error) {
	type result struct {
		full, short string
		values      []benchfmt.Value
	}
	var rs []result
	suffixes := map[string]bool{}
	rd := benchfmt.NewReader(r, fileName)
	for rd.Scan() {
		switch rec := rd.Result().(type) {
		case *benchfmt.SyntaxError:
			return nil, fmt.Errorf("gate: %w", rec)
		case *benchfmt.Result:
			full := string(rec.Name.Full())
			short, suffix := splitProcs(rec.Name)
			suffixes[suffix] = true
			rs = append(rs, result{full, short, slices.Clone(rec.Values)})
		}
	}
	if err := rd.Err(); err != nil {
		return nil, fmt.Errorf("gate: %s: %w", fileName, err)
	}
	strip := len(suffixes) == 1 && !suffixes[""]
	s := Samples{}
	for _, x := range rs {
		name := x.full
		if strip {
			name = x.short
		}
		for _, v := range x.values {
			k := key{name, v.Unit}
			s[k] = append(s[k], v.Value)
		}
	}
	if len(s) == 0 {
		return nil, fmt.Errorf("gate: %s: no benchmark results: want go test -bench output", fileName)
	}
	return s, nil
}

func readFile(path string) (Samples, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("gate: %w", err)
	}
	return Read(bytes.NewReader(b), path)
}

// splitProcs is n without its trailing "-N" part, and that part ("" when
// it has none).
func splitProcs(n benchfmt.Name) (name, suffix string) {
	base, parts := n.Parts()
	out := append([]byte{}, base...)
	for _, p := range parts {
		if len(p) > 0 && p[0] == '-' {
			suffix = string(p)
			continue
		}
		out = append(out, p...)
	}
	return string(out), suffix
}

// Compare compares base and new under t: one row per benchmark and unit
// of either file, in name then unit order.
func Compare(base, nw Samples, t Thresholds) Report {
	th := &benchmath.Thresholds{CompareAlpha: t.alpha()}
	rep := Report{Alpha: th.CompareAlpha}
	keys := map[key]bool{}
	for k := range base {
		keys[k] = true
	}
	for k := range nw {
		keys[k] = true
	}
	for k := range keys {
		rep.Rows = append(rep.Rows, compareOne(k, base[k], nw[k], t, th))
	}
	slices.SortFunc(rep.Rows, func(a, b Row) int { return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Unit, b.Unit)) })
	return rep
}

func compareOne(k key, b, n []float64, t Thresholds, th *benchmath.Thresholds) Row {
	row := Row{Name: k.name, Unit: k.unit, NBase: len(b), NNew: len(n), P: 1}
	rule, gated := t.Units[k.unit]
	if gated {
		row.LimitPct = rule.Percent
		if rule.Worse == Lower {
			row.LimitPct = -rule.Percent
		}
	}
	sb, sn := benchmath.NewSample(slices.Clone(b), th), benchmath.NewSample(slices.Clone(n), th)
	if len(b) > 0 {
		row.Base = benchmath.AssumeNothing.Summary(sb, 0.95)
	}
	if len(n) > 0 {
		row.New = benchmath.AssumeNothing.Summary(sn, 0.95)
	}
	switch {
	case !gated:
		row.Verdict = Ungated
		if len(b) > 0 && len(n) > 0 {
			row.ChangePct, row.P = change(row), benchmath.AssumeNothing.Compare(sb, sn).P
		}
		return row
	case len(n) == 0:
		row.Verdict, row.Note = Missing, "no value in the new file"
		return row
	case len(b) == 0:
		row.Verdict, row.Note = Ungated, "new: no base to compare"
		return row
	}
	c := benchmath.AssumeNothing.Compare(sb, sn)
	row.P = c.P
	row.ChangePct = change(row)
	for _, w := range c.Warnings {
		row.Note = w.Error()
	}
	if !canDecide(len(b), len(n), c.Alpha) {
		row.Verdict = TooFew
		return row
	}
	worse := row.ChangePct > row.LimitPct
	if rule.Worse == Lower {
		worse = row.ChangePct < row.LimitPct
	}
	better := -row.ChangePct > rule.Percent
	if rule.Worse == Lower {
		better = row.ChangePct > rule.Percent
	}
	significant := c.P < c.Alpha
	switch {
	case worse && significant:
		row.Verdict = Regression
	case worse:
		row.Verdict = Noisy
	case better && significant:
		row.Verdict = Better
	default:
		row.Verdict = Pass
	}
	return row
}

// canDecide is whether a U test of n1 and n2 samples can reach p < alpha
// at all: its smallest p, for samples that do not overlap, is
// 2 / C(n1+n2, n1).
func canDecide(n1, n2 int, alpha float64) bool {
	c := 1.0
	for i := 1; i <= n1; i++ {
		c = c * float64(n2+i) / float64(i)
	}
	return 2/c < alpha
}

// change is the medians' change in percent; ±Inf from a zero base.
func change(r Row) float64 {
	if r.Base.Center == r.New.Center {
		return 0
	}
	if r.Base.Center == 0 {
		return math.Copysign(math.Inf(1), r.New.Center)
	}
	return 100 * (r.New.Center/r.Base.Center - 1)
}

// Text is a benchstat-like table of the report, then one line: PASS or
// FAIL with the rows that failed.
func (r Report) Text(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "benchmark\tunit\tbase\t±\tnew\t±\tchange\tp (n)\tlimit\tverdict\n")
	var failed []string
	for _, x := range r.Rows {
		limit := "-"
		if x.LimitPct != 0 {
			limit = fmt.Sprintf("%+.0f%%", x.LimitPct)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s", x.Name, x.Unit, center(x.Base, x.NBase), spread(x.Base, x.NBase),
			center(x.New, x.NNew), spread(x.New, x.NNew), pct(x), fmt.Sprintf("p=%.3f n=%d+%d", x.P, x.NBase, x.NNew), limit, x.Verdict)
		if x.Note != "" && x.Verdict != Ungated && x.Verdict != Pass && x.Verdict != TooFew {
			fmt.Fprintf(tw, " (%s)", x.Note)
		}
		fmt.Fprintln(tw)
		if x.Verdict == Regression || x.Verdict == Missing {
			failed = append(failed, x.Name+" "+x.Unit)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(failed) > 0 {
		_, err := fmt.Fprintf(w, "FAIL: %d of %d rows: %v (alpha %g)\n", len(failed), len(r.Rows), failed, r.Alpha)
		return err
	}
	if r.Undecided() {
		_, err := fmt.Fprintf(w, "UNDECIDED: gated rows have too few samples for a U test to reach alpha %g: take 4 or more a side (make bench BENCH_COUNT=6)\n", r.Alpha)
		return err
	}
	_, err := fmt.Fprintf(w, "PASS: no significant change beyond a threshold in %d rows (alpha %g)\n", len(r.Rows), r.Alpha)
	return err
}

func center(s benchmath.Summary, n int) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprintf("%.4g", s.Center)
}

func spread(s benchmath.Summary, n int) string {
	if n == 0 {
		return ""
	}
	return s.PctRangeString()
}

func pct(x Row) string {
	if x.NBase == 0 || x.NNew == 0 {
		return "-"
	}
	return fmt.Sprintf("%+.1f%%", x.ChangePct)
}
