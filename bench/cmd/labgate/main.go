// Command labgate is the lab's regression gate: it compares two Go
// benchmark files (make bench's output) under a thresholds file and exits
// 1 when a change is significant and beyond its unit's threshold in the
// worse direction, or when the new file lacks a gated value the base has.
// It prints a benchstat-like table either way; a bad file exits 2 before
// any comparison, and so does a comparison it cannot decide (a gated row
// with too few samples for the U test to reach alpha).
//
//	labgate -base main.txt -new change.txt [-thresholds fixtures/gate/thresholds.yaml]
package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"wsgilab/bench/internal/gate"
	"wsgilab/bench/internal/report"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// The exit codes, the lab's as labcheck's (report.Exit*): 0 passed; 1 a
// regression, or a gated value the new file lacks; 2 a bad file or
// argument, or too few samples to decide. make gate turns every failure
// into 2, so a CI step that must tell them apart calls labgate itself.
const (
	exitPass      = report.ExitPass
	exitFail      = report.ExitFail
	exitUndecided = report.ExitUndecided
)

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("labgate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	base := fs.String("base", "", "the base benchmark file (e.g. main's last make bench output)")
	nw := fs.String("new", "", "the new benchmark file")
	thresholds := fs.String("thresholds", "fixtures/gate/thresholds.yaml", "the per-unit thresholds file")
	if err := fs.Parse(args); err != nil || *base == "" || *nw == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "labgate: want -base FILE -new FILE [-thresholds FILE], no other argument")
		return exitUndecided
	}
	th, err := gate.LoadThresholds(*thresholds)
	if err != nil {
		fmt.Fprintf(stderr, "labgate: %v\n", err)
		return exitUndecided
	}
	rep, err := gate.CompareFiles(*base, *nw, th)
	if err != nil {
		fmt.Fprintf(stderr, "labgate: %v\n", err)
		return exitUndecided
	}
	if err := rep.Text(stdout); err != nil {
		fmt.Fprintf(stderr, "labgate: %v\n", err)
		return exitUndecided
	}
	switch {
	case rep.Failed():
		return exitFail
	case rep.Undecided():
		return exitUndecided
	}
	return exitPass
}
