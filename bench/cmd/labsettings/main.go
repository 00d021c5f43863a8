// Command labsettings checks every LAB_* setting in the environment, as
// the test binary does before it starts anything, and exits 1 naming each
// bad one. The Makefile runs it before a target writes any file:
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
		os.Exit(1)
	}
}
