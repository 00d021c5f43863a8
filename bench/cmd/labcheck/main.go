// Command labcheck puts a team's stack file through the resilience matrix
// (what make check runs) and exits with a code a CI step can act on:
//
//	labcheck -stack path/stack.yaml [-dir reports/out]
//
//	0  every requirement held
//	1  a requirement failed on measured data: the stack failed
//	2  undecided: a bad stack file or setting (refused before anything
//	   starts), a requirement the lab could not measure, or a check that
//	   stopped before its verdict
//
// GNU make turns every failing recipe into 2, so make check cannot keep
// these apart; call labcheck itself where the difference matters. It
// checks the stack file and every LAB_* setting first, then runs
// TestStack through gotestsum (JUnit and go test -json in DIR), renders
// DIR/report.html, and prints the verdict with its exit code last.
//
// DIR is the check's own: labcheck starts it afresh each time (marking it
// with a .labcheck file) and refuses a directory that holds anything else,
// such as make test's reports, rather than mix or remove them.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"

	"wsgilab/bench/internal/engine"
	"wsgilab/bench/internal/htmlreport"
	"wsgilab/bench/internal/report"
)

func main() {
	stackPath := flag.String("stack", "", "the stack file to check (fixtures/stacks/README.md)")
	dir := flag.String("dir", "", "the check's report directory, its own (default LAB_REPORT_DIR/check, else reports/out/check)")
	flag.Parse()
	if *stackPath == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "labcheck: want -stack path/stack.yaml [-dir DIR], no other argument")
		os.Exit(report.ExitUndecided)
	}
	os.Exit(run(*stackPath, *dir))
}

func run(stackPath, dir string) int {
	wd, err := os.Getwd()
	if err != nil {
		fmt.Fprintln(os.Stderr, "labcheck:", err)
		return report.ExitUndecided
	}
	root, err := engine.ModuleRoot(wd)
	if err != nil {
		fmt.Fprintln(os.Stderr, "labcheck:", err)
		return report.ExitUndecided
	}
	abs, err := filepath.Abs(stackPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, "labcheck:", err)
		return report.ExitUndecided
	}
	environ := append(os.Environ(), "LAB_STACK="+abs, "LAB_QUIET=1")
	// Everything is checked before anything starts or is written.
	settings, err := engine.ParseSettings(environ, root)
	if err != nil {
		fmt.Fprintf(os.Stderr, "labcheck: bad settings, nothing was started or written:\n%v\n", err)
		return report.ExitUndecided
	}
	if dir == "" {
		dir = filepath.Join(settings.ReportDir, "check")
	}
	if dir, err = filepath.Abs(dir); err != nil {
		fmt.Fprintln(os.Stderr, "labcheck:", err)
		return report.ExitUndecided
	}
	if err := freshCheckDir(dir); err != nil {
		fmt.Fprintln(os.Stderr, "labcheck:", err)
		return report.ExitUndecided
	}
	environ = append(environ, "LAB_REPORT_DIR="+dir)
	cmd := exec.Command("go", "tool", "gotestsum", "--format", "standard-verbose",
		"--junitfile", filepath.Join(dir, "junit.xml"), "--jsonfile", filepath.Join(dir, "test.json"),
		"--", "-count=1", "-timeout", "60m", "-run", "^TestStack$", "./bench")
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = root, environ, os.Stdout, os.Stderr
	testErr := cmd.Run()
	var exit *exec.ExitError
	if testErr != nil && !errors.As(testErr, &exit) {
		fmt.Fprintln(os.Stderr, "labcheck: gotestsum:", testErr)
		return report.ExitUndecided
	}
	if err := htmlreport.Write(dir); err != nil {
		fmt.Fprintln(os.Stderr, "labcheck:", err)
	} else {
		page := filepath.Join(dir, htmlreport.FileName)
		if rel, err := filepath.Rel(wd, page); err == nil && filepath.IsLocal(rel) {
			page = rel
		}
		fmt.Println(page)
	}
	var stacks []report.Stack
	if b, err := os.ReadFile(filepath.Join(dir, "stacks.json")); err == nil {
		if err := json.Unmarshal(b, &stacks); err != nil {
			fmt.Fprintln(os.Stderr, "labcheck: stacks.json:", err)
			return report.ExitUndecided
		}
	}
	fmt.Println()
	if err := report.CheckSummary(stacks, settings.Stack.Name)(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "labcheck:", err)
		return report.ExitUndecided
	}
	code, _ := report.CheckExit(stacks, settings.Stack.Name)
	if testErr != nil && code == report.ExitPass {
		// The requirements held, but the test process failed after them
		// (a report it could not write, the safety stop): not a pass.
		fmt.Println("labcheck: the check's test process failed after its verdict (its output above says why); exit 2")
		return report.ExitUndecided
	}
	return code
}

// checkMark marks a directory as a stack check's own.
const checkMark = ".labcheck"

// freshCheckDir makes dir an empty directory of labcheck's own: a new
// one, an empty one, or the last check's (which it empties); anything
// else it refuses, so no other report is mixed into or removed.
func freshCheckDir(dir string) error {
	es, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return err
	case len(es) > 0:
		if _, err := os.Stat(filepath.Join(dir, checkMark)); err != nil {
			return fmt.Errorf("-dir %s holds other files than a stack check's (no %s): give labcheck an empty directory, or one of its own", dir, checkMark)
		}
		for _, e := range es {
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, checkMark), []byte("a stack check's report directory: labcheck empties it for the next check\n"), 0o644)
}
