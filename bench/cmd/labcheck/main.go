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
	"strings"

	"wsgilab/bench/internal/engine"
	"wsgilab/bench/internal/htmlreport"
	"wsgilab/bench/internal/report"
)

func main() {
	stackPath := flag.String("stack", "", "the stack file to check (fixtures/stacks/README.md)")
	dir := flag.String("dir", "", "the report directory (default LAB_REPORT_DIR, else reports/out)")
	flag.Parse()
	if *stackPath == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "labcheck: want -stack path/stack.yaml [-dir DIR], no other argument")
		os.Exit(report.ExitUndecided)
	}
	os.Exit(run(*stackPath, *dir))
}

func run(stackPath, dir string) int {
	root, err := moduleRoot()
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
	if dir != "" {
		if dir, err = filepath.Abs(dir); err != nil {
			fmt.Fprintln(os.Stderr, "labcheck:", err)
			return report.ExitUndecided
		}
		environ = append(environ, "LAB_REPORT_DIR="+dir)
	}
	// Everything is checked before anything starts or is written.
	settings, err := engine.ParseSettings(environ, root)
	if err != nil {
		fmt.Fprintf(os.Stderr, "labcheck: bad settings, nothing was started or written:\n%v\n", err)
		return report.ExitUndecided
	}
	dir = settings.ReportDir
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "labcheck:", err)
		return report.ExitUndecided
	}
	// A stacks.json of an earlier check must not speak for this one.
	if err := os.Remove(filepath.Join(dir, "stacks.json")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintln(os.Stderr, "labcheck:", err)
		return report.ExitUndecided
	}
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
		fmt.Println(filepath.Join(dir, htmlreport.FileName))
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
	return code
}

// moduleRoot is the directory of the lab's go.mod, where go test runs.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("not inside the lab's module: run labcheck from its checkout")
	}
	return filepath.Dir(mod), nil
}
