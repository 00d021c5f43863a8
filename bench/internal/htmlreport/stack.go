package htmlreport

import (
	"fmt"
	"strings"

	"wsgilab/bench/internal/report"
)

// stackView is one stack check of stacks.json.
type stackView struct {
	Name, Server, Path, Capacity, Bound, Verdict, Advice string
	// Class is the verdict's: pass, fail, or expected (an example meant
	// to fail that did).
	Class string
	// Images are the images it ran, from environment.json.
	Images     string
	Pass       bool
	Baseline   string
	Behaviours []stackBehaviourView
	// Resets are its resets: Noun the column, Required the clients cut,
	// Steps what the cut did and left.
	Resets []stackBehaviourView
}

type stackBehaviourView struct {
	Noun, Text, Steps string
	Required          int
	Pass              bool
	// NoData: a reset the lab could not judge (neither pass nor fail).
	NoData bool
}

// buildStacks shows each stack check: its verdict per behaviour, the
// steps behind it, the advice, and the images it ran (env may be nil).
func buildStacks(stacks []report.Stack, env *report.Environment) []stackView {
	var out []stackView
	for _, s := range stacks {
		var images []string
		if env != nil {
			for _, e := range env.Stacks {
				if e.Name == s.Name {
					for _, im := range e.Images {
						images = append(images, im.Ref+" ("+im.ID+")")
					}
				}
			}
		}
		v := stackView{Name: s.Name, Server: s.Server, Path: s.Path, Capacity: fmt.Sprintf("%d (%s)", s.Capacity, s.Basis),
			Bound: fmt.Sprintf("%g ms", s.FastP95Ms), Pass: s.Pass, Verdict: s.Verdict(), Advice: s.Advice, Baseline: stepText(s.Baseline)}
		if len(images) > 0 {
			v.Images = "images: " + strings.Join(images, ", ")
		}
		v.Class = map[string]string{report.VerdictPass: "pass", report.VerdictExpected: "expected", report.VerdictUndecided: "skip"}[v.Verdict]
		if v.Class == "" {
			v.Class = "fail"
		}
		for _, b := range s.Behaviours {
			var steps []string
			for _, st := range b.Steps {
				steps = append(steps, stepText(st))
			}
			v.Behaviours = append(v.Behaviours, stackBehaviourView{Noun: b.Noun, Text: b.Text, Required: b.Required, Pass: b.Pass,
				Steps: strings.Join(steps, "; ")})
		}
		for _, r := range s.Resets {
			v.Resets = append(v.Resets, stackBehaviourView{Noun: r.Column + " (" + r.Noun + ")", Text: r.Text, Required: r.Clients, Pass: r.Pass,
				NoData: r.NoData, Steps: resetText(r)})
		}
		out = append(out, v)
	}
	return out
}

// resetText is a reset's runs and what its cut did and left (cutText,
// less the app's records, which a team's app does not keep).
func resetText(r report.StackReset) string {
	s := fmt.Sprintf("%s: runs %d of %d sound", r.Condition, r.RunsSound, r.RunsTotal)
	if r.Cut != nil {
		s += "; " + cutText(r.Cut, false)
	}
	return s
}

// stepText is "2: p95 5965 ms (broken; runs 5965 ms, 5964 ms)".
func stepText(st report.StackStep) string {
	var runs []string
	for _, p := range st.P95MsRuns {
		runs = append(runs, num(p)+" ms")
	}
	s := fmt.Sprintf("%d: p95 %s ms (%s; runs %s)", st.Clients, num(st.P95Ms), st.State, strings.Join(runs, ", "))
	if st.Failed != "" {
		s += "; " + st.Failed
	}
	return s
}
