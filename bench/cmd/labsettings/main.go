// Command labsettings checks every LAB_* setting in the environment (a
// stack file in LAB_STACK among them), as the test binary does before it
// starts anything, and exits 2, bad input, naming each bad one. The
// Makefile runs it before a target installs or writes anything:
//
//	LAB_RUNS=0 labsettings
//	labsettings: LAB_RUNS="0": want a whole number from 1 to 100 (...)
package main

import (
	"fmt"
	"os"

	"wsgilab/bench/internal/engine"
)

func main() {
	wd, err := os.Getwd()
	if err == nil {
		wd, err = engine.ModuleRoot(wd)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "labsettings:", err)
		os.Exit(2)
	}
	if _, err := engine.ParseSettings(os.Environ(), wd); err != nil {
		fmt.Fprintf(os.Stderr, "labsettings: bad settings, nothing was started or written:\n%v\n", err)
		os.Exit(2)
	}
}
