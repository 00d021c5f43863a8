package bench

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"wsgilab/bench/internal/engine"
	"wsgilab/bench/internal/report"
)

// progressA counts article A's runs, progressB article B's rows.
var progressA, progressB, progressSweep = &engine.Progress{}, &engine.Progress{}, &engine.Progress{}

// assertVerdicts asserts each evaluated verdict in a subtest named by its
// id, printing measured against threshold. A verdict whose conditions did
// not run (go test -run picked others) is skipped; one whose conditions
// ran but whose data is missing fails with the reason.
func assertVerdicts(t *testing.T, claims []report.Claim) {
	for _, cl := range claims {
		t.Run(cl.ID, func(t *testing.T) {
			switch cl.Status {
			case report.StatusNotRun:
				t.Skip(cl.Note)
			case report.StatusMissing:
				t.Fatalf("%s verdict %q: %s", cl.Kind, cl.Text, cl.Note)
			}
			assert.Truef(t, cl.Holds, "%s verdict %q: measured %.4g %s, threshold %s %s",
				cl.Kind, cl.Text, cl.Measured, cl.Unit, cl.Threshold, cl.Unit)
		})
	}
}
