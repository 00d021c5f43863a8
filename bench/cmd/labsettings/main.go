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
	"os/exec"
	"strings"

	"wsgilab/bench/internal/engine"
)

func main() {
	root := "."
	if out, err := exec.Command("go", "env", "GOMOD").Output(); err == nil {
		if mod := strings.TrimSpace(string(out)); mod != "" && mod != os.DevNull {
			root = strings.TrimSuffix(mod, "/go.mod")
		}
	}
	if _, err := engine.ParseSettings(os.Environ(), root); err != nil {
		fmt.Fprintf(os.Stderr, "labsettings: bad settings, nothing was started or written:\n%v\n", err)
		os.Exit(2)
	}
}
