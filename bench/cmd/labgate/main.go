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
	"os"

	"wsgilab/bench/internal/gate"
)

func main() {
	base := flag.String("base", "", "the base benchmark file (e.g. main's last make bench output)")
	nw := flag.String("new", "", "the new benchmark file")
	thresholds := flag.String("thresholds", "fixtures/gate/thresholds.yaml", "the per-unit thresholds file")
	flag.Parse()
	if *base == "" || *nw == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "labgate: want -base FILE -new FILE [-thresholds FILE], no other argument")
		os.Exit(2)
	}
	th, err := gate.LoadThresholds(*thresholds)
	if err != nil {
		fmt.Fprintf(os.Stderr, "labgate: %v\n", err)
		os.Exit(2)
	}
	rep, err := gate.CompareFiles(*base, *nw, th)
	if err != nil {
		fmt.Fprintf(os.Stderr, "labgate: %v\n", err)
		os.Exit(2)
	}
	if err := rep.Text(os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "labgate: %v\n", err)
		os.Exit(2)
	}
	if rep.Failed() {
		os.Exit(1)
	}
	if rep.Undecided() {
		os.Exit(2)
	}
}
