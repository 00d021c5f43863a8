package engine

import (
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// A Job is the whole of one go test of the lab's bench package (make
// test, make repro): the top-level tests it will run, in the order go
// test runs them, each with its units (a run, an article B row, or the
// test whole) and what a unit is expected to take. It prints its plan
// first, then one line per finished unit with one ETA for the rest of the
// job: the expected time of every unit left, scaled by how this machine
// has kept to the estimates so far. Units a resumed series takes from its
// journal cost nothing, so the first ETA after a resume is already right.
type Job struct {
	// Quiet leaves Out out (LAB_QUIET); Verbose means log already
	// reaches the terminal (go test -v), and Out is left out too.
	Quiet, Verbose bool
	// Out is where the lines go besides log (os.Stderr when nil).
	Out io.Writer
	// Now is the job's clock (time.Now when nil).
	Now func() time.Time

	mu      sync.Mutex
	parts   []JobPart
	ran     []int // units that ran here (not taken from the journal), per part
	kept    map[string]bool
	started time.Time
	// measured is the expected time of the finished units that ran here:
	// the job has taken time.Since(started) for it.
	measured time.Duration
	current  int // the part under way; -1 before the first
}

// JobPart is one top-level test of a job.
type JobPart struct {
	Test string
	// Units is how many units it has (runs, article B rows; 1 for a test
	// timed whole), Unit names them, and Each is what one is expected to
	// take. Kept are units a resumed series' journal holds already.
	Units int
	Unit  string
	Each  time.Duration
	Kept  int
}

// Expected is what the part's units left to run should take.
func (p JobPart) Expected() time.Duration { return time.Duration(p.Units-p.Kept) * p.Each }

// NewJob is a job of parts, in the order they run; kept are the unit keys
// (Job.RunDone's) a resumed series takes from its journal.
func NewJob(parts []JobPart, kept []string) *Job {
	j := &Job{parts: parts, ran: make([]int, len(parts)), kept: map[string]bool{}, current: -1}
	for _, k := range kept {
		j.kept[k] = true
	}
	return j
}

// Start marks the job's start: its first unit's time counts from here.
func (j *Job) Start() {
	j.mu.Lock()
	j.started = j.now()
	j.mu.Unlock()
}

func (j *Job) now() time.Time {
	if j.Now != nil {
		return j.Now()
	}
	return time.Now()
}

// Plan writes what the job will run: a line per test with its units and
// their expected time, and the whole.
func (j *Job) Plan(w io.Writer, title string) error {
	var b strings.Builder
	var total time.Duration
	units := 0
	for _, p := range j.parts {
		total += p.Expected()
		units += p.Units - p.Kept
	}
	fmt.Fprintf(&b, "%s: %d tests, %d units, about %v\n", title, len(j.parts), units, roundMinute(total))
	for _, p := range j.parts {
		kept := ""
		if p.Kept > 0 {
			kept = fmt.Sprintf(" (%d from the journal)", p.Kept)
		}
		fmt.Fprintf(&b, "  %-36s %4d %-13s about %v%s\n", p.Test, p.Units, p.Unit, roundMinute(p.Expected()), kept)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func (j *Job) out() io.Writer {
	if j.Out != nil {
		return j.Out
	}
	return os.Stderr
}

// RunDone reports a finished unit of test (t.Name(), whose top-level test
// counts): run k of n of unit (a condition, an article B row), with its
// summary, and the job's ETA. key is the unit's journal key ("" when it
// has none): a kept unit took no time.
func (j *Job) RunDone(log func(...any), name, unit, key string, k, n int, summary string) {
	test, _, _ := strings.Cut(name, "/")
	j.mu.Lock()
	if j.started.IsZero() {
		j.started = j.now()
	}
	i := slices.IndexFunc(j.parts, func(p JobPart) bool { return p.Test == test })
	if i >= 0 {
		j.advance(i)
		if !j.kept[key] {
			j.ran[i]++
			j.measured += j.parts[i].Each
		}
	}
	eta, elapsed := j.eta(), j.now().Sub(j.started)
	j.mu.Unlock()
	line := fmt.Sprintf("%s run %d/%d: %s; elapsed %v, job ETA %v", unit, k, n, summary, elapsed.Round(time.Second), eta.Round(time.Second))
	log(line)
	if !j.Quiet && !j.Verbose {
		fmt.Fprintln(j.out(), "wsgilab:", line)
	}
}

// advance makes part i the one under way: go test runs the parts in
// order, so every part before it is over, whatever units it did not run
// (a -run filter, a stack check that stopped early). A part timed whole
// is measured when it ends.
func (j *Job) advance(i int) {
	for ; j.current < i; j.current++ {
		if c := j.current; c >= 0 && j.parts[c].Unit == UnitTest && j.ran[c] == 0 && j.parts[c].Kept == 0 {
			j.ran[c] = 1
			j.measured += j.parts[c].Each
		}
	}
}

// eta is the expected time of every unit left, scaled by how long the
// measured units took against their estimates.
func (j *Job) eta() time.Duration {
	var left time.Duration
	for i, p := range j.parts {
		if i < j.current {
			continue
		}
		if rest := p.Units - p.Kept - j.ran[i]; rest > 0 {
			left += time.Duration(rest) * p.Each
		}
	}
	if j.measured > 0 {
		left = time.Duration(float64(left) * float64(j.now().Sub(j.started)) / float64(j.measured))
	}
	return left
}

// ETA is the job's ETA now.
func (j *Job) ETA() time.Duration {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.eta()
}

// UnitTest is the unit of a test timed whole.
const UnitTest = "test"

func roundMinute(d time.Duration) time.Duration {
	if d < time.Minute {
		return d.Round(time.Second)
	}
	return d.Round(30 * time.Second)
}

// RunFilter is go test's -run and -skip patterns, split as package
// testing splits them: at a top-level | into alternatives, each at the
// slashes outside brackets and parentheses into one regexp per level of
// test names (a top-level test, then its subtests).
type RunFilter struct {
	run, skip [][]*regexp.Regexp
}

// ParseRunFilter reads -run and -skip patterns; an empty -run matches
// everything and an empty -skip skips nothing.
func ParseRunFilter(run, skip string) (RunFilter, error) {
	var f RunFilter
	var err error
	if f.run, err = splitPattern(run); err != nil {
		return RunFilter{}, fmt.Errorf("-test.run %q: %w", run, err)
	}
	if f.skip, err = splitPattern(skip); err != nil {
		return RunFilter{}, fmt.Errorf("-test.skip %q: %w", skip, err)
	}
	return f, nil
}

// Runs is whether the test at path (its top-level name, then its
// subtests' names) may run: some -run alternative matches every level of
// path it has, and no -skip alternative matches all of its own levels.
func (f RunFilter) Runs(path ...string) bool {
	match := f.run == nil || slices.ContainsFunc(f.run, func(alt []*regexp.Regexp) bool {
		for i, name := range path {
			if i < len(alt) && !alt[i].MatchString(name) {
				return false
			}
		}
		return true
	})
	skipped := slices.ContainsFunc(f.skip, func(alt []*regexp.Regexp) bool {
		if len(path) < len(alt) {
			return false
		}
		for i, re := range alt {
			if !re.MatchString(path[i]) {
				return false
			}
		}
		return true
	})
	return match && !skipped
}

// splitPattern is package testing's splitRegexp: alternatives at a |
// outside brackets and parentheses, levels at a / outside them.
func splitPattern(pattern string) ([][]*regexp.Regexp, error) {
	if pattern == "" {
		return nil, nil
	}
	var alts [][]string
	levels := []string{}
	cs, cp, start := 0, 0, 0 // bracket and parenthesis depths
	for i := 0; i < len(pattern); i++ {
		switch pattern[i] {
		case '[':
			cs++
		case ']':
			if cs--; cs < 0 {
				cs = 0
			}
		case '(':
			if cs == 0 {
				cp++
			}
		case ')':
			if cs == 0 {
				cp--
			}
		case '\\':
			i++
		case '/':
			if cs == 0 && cp == 0 {
				levels = append(levels, pattern[start:i])
				start = i + 1
			}
		case '|':
			if cs == 0 && cp == 0 {
				alts = append(alts, append(levels, pattern[start:i]))
				levels, start = []string{}, i+1
			}
		}
	}
	alts = append(alts, append(levels, pattern[start:]))
	var out [][]*regexp.Regexp
	for _, alt := range alts {
		var res []*regexp.Regexp
		for _, p := range alt {
			re, err := regexp.Compile(p)
			if err != nil {
				return nil, err
			}
			res = append(res, re)
		}
		out = append(out, res)
	}
	return out, nil
}
