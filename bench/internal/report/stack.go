package report

import (
	"fmt"
	"io"
	"strings"
)

// Stack is a stack check's verdict (stacks.json): a team's stack file put
// through the matrix's columns it requires, step by step.
type Stack struct {
	Name string `json:"name"`
	// Server is the server in a few words ("2 sync workers"), Path how
	// clients reach it ("direct", "nginx-on", "nginx-off", "nginx-custom").
	Server string `json:"server"`
	Path   string `json:"path"`
	// Capacity is how many requests the server command lets it hold at
	// once, as the lab read it (Basis says how), or the largest
	// requirement when the command declares none the lab can read.
	Capacity int    `json:"capacity"`
	Basis    string `json:"capacity_basis"`
	// CapacityDeclared is true when the command declared Capacity.
	CapacityDeclared bool `json:"capacity_declared"`
	// FastP95Ms is the fast path's bound at every step.
	FastP95Ms  float64          `json:"fast_p95_ms"`
	Baseline   StackStep        `json:"baseline"`
	Behaviours []StackBehaviour `json:"behaviours"`
	// Resets are its required resets (requires.resets), each one step.
	Resets []StackReset `json:"resets,omitempty"`
	// Pass is true when every requirement held, resets included.
	Pass bool `json:"pass"`
	// Advice is one sentence taken from the matrix.
	Advice string `json:"advice"`
	// ExpectFails marks an example stack meant to fail a requirement
	// (fixtures/stacks/sync.yaml): its FAIL is the expected outcome.
	ExpectFails bool `json:"expect_fails,omitempty"`
}

// StackBehaviour is one required slow-client behaviour.
type StackBehaviour struct {
	// Column is the matrix column ("slow-read"), Noun its clients ("slow
	// readers").
	Column   string `json:"column"`
	Noun     string `json:"noun"`
	Required int    `json:"required"`
	// Path is the path its steps ran on, when not the stack's own: slow
	// TLS handshakes run with TLS added (direct-tls, nginx-tls-on, …).
	Path string `json:"path,omitempty"`
	// Baseline is its own step 0 on Path (the fast path alone), when it
	// has a path of its own; else the stack's Baseline is its step 0.
	Baseline *StackStep `json:"baseline,omitempty"`
	// Steps are the steps run, ascending by clients: the required one
	// and the one past it, or those from 1 up to the first broken and the
	// required one (labrun's RunStack bracket); a step not run below one
	// held held too.
	Steps []StackStep `json:"steps"`
	// HeldUpTo is the most slow clients under which the fast path held
	// (-1: not even the baseline); StallsAt the first step that broke, 0
	// when none did up to the last step.
	HeldUpTo int  `json:"held_up_to"`
	StallsAt int  `json:"stalls_at"`
	Pass     bool `json:"pass"`
	// NoData is true when the lab could not decide the requirement (a
	// step it could not measure): neither a pass nor the stack's failure.
	NoData bool `json:"no_data,omitempty"`
	// Text is "stalls at 2 slow readers" or "none up to 3 slow readers".
	Text string `json:"text"`
}

// StackReset is one required reset: Clients of a behaviour cut part-way
// at once (a reset column's fault on the stack), and what the cut left.
type StackReset struct {
	// Column is the matrix column ("reset-mid-download"), Noun its
	// clients ("slow readers").
	Column    string `json:"column"`
	Noun      string `json:"noun"`
	Clients   int    `json:"clients"`
	Condition string `json:"condition"`
	// RunsSound and RunsTotal count its runs: one, or more until one is
	// measured whole (at most 3).
	RunsSound int `json:"runs_sound"`
	RunsTotal int `json:"runs_total"`
	// Cut is what the cut did and left, the worst of its sound runs; nil
	// when none was sound.
	Cut *Cut `json:"cut,omitempty"`
	// Pass is true when every verdict of the reset held; NoData when the
	// lab could not judge it (not run, as when the baseline did not hold;
	// no sound run; a verdict without data; or a hop that did not cut
	// where it cuts).
	Pass   bool `json:"pass"`
	NoData bool `json:"no_data,omitempty"`
	// Text is "lets go of 2 slow readers cut at 4 MiB: …" or what it
	// kept hold of.
	Text string `json:"text"`
}

// StackStep is one step: n slow clients, its condition and what its runs
// said.
type StackStep struct {
	Clients   int    `json:"clients"`
	Condition string `json:"condition"`
	// State is "held", "broken" or "no data".
	State string `json:"state"`
	// P95Ms is the median p95 of its valid runs; P95MsRuns each's.
	P95Ms     float64   `json:"p95_ms"`
	P95MsRuns []float64 `json:"p95_ms_runs"`
	RunsSound int       `json:"runs_sound"`
	RunsTotal int       `json:"runs_total"`
	// Failed says what failed in its runs, if anything.
	Failed string `json:"failed,omitempty"`
	// Why, for a step with no data, says why: the reasons its runs could
	// not be measured, or that they split evenly.
	Why string `json:"why,omitempty"`
}

// StackEnv is what environment.json keeps of a stack check: the file as
// read and the images it ran.
type StackEnv struct {
	Name   string  `json:"name"`
	File   string  `json:"file"`
	Source string  `json:"source"`
	Images []Image `json:"images"`
}

// Text writes the check as it prints: the verdict, the baseline, one line
// per behaviour with its steps, and the advice.
func (s Stack) Text(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s (%s, %s; capacity %d: %s; the fast path's p95 bound %g ms)\n", s.Name, s.Verdict(), s.Server, s.Path,
		s.Capacity, s.Basis, s.FastP95Ms)
	fmt.Fprintf(&b, "  baseline, no slow client: p95 %s ms, %s%s\n", MsText(s.Baseline.P95Ms), s.Baseline.State, why(s.Baseline))
	for _, x := range s.Behaviours {
		mark := "FAIL"
		if x.Pass {
			mark = "ok"
		}
		var steps []string
		for _, st := range x.Steps {
			steps = append(steps, fmt.Sprintf("%d: %s ms %s (%d run%s)", st.Clients, MsText(st.P95Ms), st.State, st.RunsTotal, plural(st.RunsTotal)))
		}
		fmt.Fprintf(&b, "  %-4s %s: requires %d, %s [%s]\n", mark, x.Noun, x.Required, x.Text, strings.Join(steps, "; "))
	}
	for _, x := range s.Resets {
		mark := "FAIL"
		switch {
		case x.Pass:
			mark = "ok"
		case x.NoData:
			mark = "?"
		}
		fmt.Fprintf(&b, "  %-4s %s: %s (%s, %d run%s)\n", mark, x.Column, x.Text, x.Condition, x.RunsTotal, plural(x.RunsTotal))
	}
	fmt.Fprintf(&b, "Advice: %s\n", s.Advice)
	_, err := io.WriteString(w, b.String())
	return err
}

// why is ": <why>" for a step with no data.
func why(s StackStep) string {
	if s.Why == "" {
		return ""
	}
	return ": " + s.Why
}

// The stack check's verdicts in words (Stack.Verdict).
const (
	VerdictPass      = "PASS"
	VerdictFail      = "FAIL"
	VerdictUndecided = "UNDECIDED"
	VerdictExpected  = "FAIL, as this example is meant to"
)

// Verdict is the check's verdict in a word, as every report says it and
// labcheck exits by it (CheckExit): PASS when every requirement held;
// FAIL when one failed on measured data (or the words of an example meant
// to fail); UNDECIDED when none failed but one has no data.
func (s Stack) Verdict() string {
	if s.Pass {
		return VerdictPass
	}
	failed := len(s.Behaviours) == 0 && s.Baseline.State != "no data"
	for _, b := range s.Behaviours {
		failed = failed || (!b.Pass && !b.NoData)
	}
	resetFailed := false
	for _, r := range s.Resets {
		resetFailed = resetFailed || (!r.Pass && !r.NoData)
	}
	switch {
	case resetFailed: // an example is meant to fail a behaviour, never a reset
		return VerdictFail
	case !failed:
		return VerdictUndecided
	case s.ExpectFails:
		return VerdictExpected
	}
	return VerdictFail
}

// MsText prints milliseconds to about three significant digits: 5965,
// 48.2, 1.24.
func MsText(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// The exit codes of the lab's commands that decide (labcheck, labgate):
// GNU make turns every failing recipe into 2, so a CI step that must tell
// a failure from an undecided result calls them itself.
const (
	ExitPass      = 0 // every requirement held
	ExitFail      = 1 // a requirement failed on measured data
	ExitUndecided = 2 // bad input, or a requirement without data
)

// CheckExit is the exit code of a check of the stack name, from the
// stacks.json it wrote (stacks), and why: a requirement that failed on data
// fails the stack whatever else is undecided; one without data, or no
// verdict at all, leaves it undecided.
func CheckExit(stacks []Stack, name string) (int, string) {
	for _, s := range stacks {
		if s.Name != name {
			continue
		}
		var failed, undecided []string
		for _, b := range s.Behaviours {
			switch {
			case b.NoData:
				undecided = append(undecided, b.Noun+": "+b.Text)
			case !b.Pass:
				failed = append(failed, fmt.Sprintf("%s: requires %d, %s", b.Noun, b.Required, b.Text))
			}
		}
		for _, r := range s.Resets {
			switch {
			case r.NoData:
				undecided = append(undecided, r.Column+": "+r.Text)
			case !r.Pass:
				failed = append(failed, r.Column+": "+r.Text)
			}
		}
		switch s.Verdict() {
		case VerdictPass:
			return ExitPass, fmt.Sprintf("PASS: %s held every requirement", name)
		case VerdictUndecided:
			return ExitUndecided, fmt.Sprintf("UNDECIDED: the lab could not decide %s (%s)", name, strings.Join(undecided, "; "))
		}
		return ExitFail, fmt.Sprintf("FAIL: %s failed a requirement (%s)", name, strings.Join(failed, "; "))
	}
	return ExitUndecided, fmt.Sprintf("UNDECIDED: no verdict of %s in stacks.json (the check stopped before one; its output above says why)", name)
}

// CheckSummary writes what labcheck prints when a check of the stack name
// ends: the check as Text prints it, then its outcome and exit code.
func CheckSummary(stacks []Stack, name string) Reporter {
	return func(w io.Writer) error {
		for _, s := range stacks {
			if s.Name == name {
				if err := s.Text(w); err != nil {
					return err
				}
			}
		}
		code, why := CheckExit(stacks, name)
		_, err := fmt.Fprintf(w, "labcheck: %s; exit %d\n", why, code)
		return err
	}
}
