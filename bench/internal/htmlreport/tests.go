package htmlreport

import (
	"slices"
	"strings"
)

// The tests section: test.json, the `go test -json` stream gotestsum
// saves, folded per package and per top-level test.

type testsView struct {
	Missing  string
	Packages []packageRow
	Tops     []topRow
	Failing  []testOutput
	Skipped  []testOutput
	Pass     int
	Fail     int
	Skip     int
}

type packageRow struct{ Package, Result, Elapsed string }

// topRow counts the leaf tests under one top-level test (the test itself
// when it has no subtests).
type topRow struct {
	Package, Test, Result, Elapsed string
	Pass, Fail, Skip               int
}

type testOutput struct {
	Package, Test, Output string
}

// Output kept per failing or skipped test.
const (
	maxOutputLines = 40
	maxOutputBytes = 4000
)

func buildTests(evs []testEvent) testsView {
	if evs == nil {
		return testsView{Missing: "no test.json"}
	}
	type key struct{ pkg, test string }
	var (
		pkgs    []string
		pkgRes  = map[string]packageRow{}
		order   []key // tests in order of first appearance
		seen    = map[key]bool{}
		result  = map[key]testEvent{}
		output  = map[key]*strings.Builder{}
		parents = map[key]bool{}
	)
	for _, e := range evs {
		if e.Test == "" {
			if e.Package == "" {
				continue
			}
			if _, ok := pkgRes[e.Package]; !ok {
				pkgs = append(pkgs, e.Package)
				pkgRes[e.Package] = packageRow{Package: e.Package, Result: "unknown", Elapsed: "–"}
			}
			if e.Action == "pass" || e.Action == "fail" || e.Action == "skip" {
				pkgRes[e.Package] = packageRow{Package: e.Package, Result: e.Action, Elapsed: seconds(e.Elapsed)}
			}
			continue
		}
		k := key{e.Package, e.Test}
		if !seen[k] {
			seen[k] = true
			order = append(order, k)
			if _, ok := pkgRes[e.Package]; !ok {
				pkgs = append(pkgs, e.Package)
				pkgRes[e.Package] = packageRow{Package: e.Package, Result: "unknown", Elapsed: "–"}
			}
			for p := e.Test; strings.Contains(p, "/"); {
				p = p[:strings.LastIndex(p, "/")]
				parents[key{e.Package, p}] = true
			}
		}
		switch e.Action {
		case "pass", "fail", "skip":
			result[k] = e
		case "output":
			if output[k] == nil {
				output[k] = &strings.Builder{}
			}
			if !strings.HasPrefix(e.Output, "=== ") {
				output[k].WriteString(e.Output)
			}
		}
	}

	v := testsView{}
	for _, p := range pkgs {
		v.Packages = append(v.Packages, pkgRes[p])
	}
	tops := map[key]*topRow{}
	var topOrder []key
	for _, k := range order {
		top := key{k.pkg, strings.SplitN(k.test, "/", 2)[0]}
		t := tops[top]
		if t == nil {
			t = &topRow{Package: top.pkg, Test: top.test, Result: "unknown", Elapsed: "–"}
			tops[top] = t
			topOrder = append(topOrder, top)
		}
		e, done := result[k]
		if k == top && done {
			t.Result, t.Elapsed = e.Action, seconds(e.Elapsed)
		}
		if parents[k] {
			continue
		}
		out := testOutput{Package: k.pkg, Test: k.test}
		if b := output[k]; b != nil {
			out.Output = trimOutput(b.String())
		}
		switch {
		case !done:
			// Still running when the stream ended, e.g. a timeout.
			t.Fail++
			v.Fail++
			out.Output = strings.TrimSpace("no result in test.json (interrupted?)\n" + out.Output)
			v.Failing = append(v.Failing, out)
		case e.Action == "pass":
			t.Pass++
			v.Pass++
		case e.Action == "fail":
			t.Fail++
			v.Fail++
			v.Failing = append(v.Failing, out)
		case e.Action == "skip":
			t.Skip++
			v.Skip++
			v.Skipped = append(v.Skipped, out)
		}
	}
	for _, k := range topOrder {
		v.Tops = append(v.Tops, *tops[k])
	}
	return v
}

// trimOutput keeps the first lines of a test's output.
func trimOutput(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	cut := false
	if len(lines) > maxOutputLines {
		lines, cut = slices.Clone(lines[:maxOutputLines]), true
	}
	s = strings.Join(lines, "\n")
	if len(s) > maxOutputBytes {
		s, cut = strings.ToValidUTF8(s[:maxOutputBytes], ""), true
	}
	if cut {
		s += "\n… (cut; the whole output is in test.json)"
	}
	return s
}
