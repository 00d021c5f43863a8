package verdict

import (
	"fmt"
	"strings"
)

// VersionVerdict is the verdict that the version cell measured by
// condition id (row, its server run by Gunicorn release) falls where its
// twin does under the installed Gunicorn (23.0.0, article A's), the same
// server, column and path: it meets the twin's rule r, which the twin's
// own verdicts assert of the twin.
func VersionVerdict(r CellRule, release, row, twin, path, id string) Verdict {
	v := CellVerdict(r, row, path, id)
	v.ID = strings.TrimPrefix(id, "matrix-") + "-as-gunicorn-23"
	why := r.Why
	if ch, ok := ChangeFor(r.Column, twin, path, release); ok {
		// The twin's mechanism is not this release's here.
		why = "the same verdict by another way: " + ch.Why
	}
	v.Text = fmt.Sprintf("Gunicorn %s on %s %s under %s falls where Gunicorn 23.0.0 does on %s (%s): %s",
		release, row, pathText(path), r.Column, twin, r.Expect, why)
	return v
}

// VersionChange is a cell where the two Gunicorn releases differ: what
// the slow clients get (their outcome) under the installed release on the
// twin's cell, and under Release on the version cell. Both sides are
// asserted (VersionChangeVerdict), beside the twin's rule, which both
// meet.
type VersionChange struct {
	Column, Row, Path string // the twin's cell: Row under the installed release
	Release           string
	// Installed and Changed are the outcome (as in downloads.json) every
	// slow client gets under the installed release and under Release.
	Installed, Changed string
	Why                string
}

// VersionChanges are the cells where Gunicorn 20.1.0 and 23.0.0 differ
// (2 runs of each version cell against the twins' series, an AMD EPYC,
// 2026-12-07; reports/measurements.md, stop 64).
var VersionChanges = []VersionChange{
	{Column: hang, Row: syncRow, Path: direct, Release: "20.1.0", Installed: "status", Changed: "refused",
		Why: "the arbiter aborts the sleeping sync worker at --timeout 5 with SIGABRT, whose handler raises SystemExit inside the app's time.sleep. " +
			"23.0.0's sync worker catches it in handle_request (except BaseException) and answers 500 as it exits (9 runs of stop 62); " +
			"20.1.0's catches Exception only, so the worker exits with the connection closed before any header (4 hung requests of 2 runs)"},
}

// ChangeFor is the version change at a twin's cell, false when the
// releases do not differ there.
func ChangeFor(col, twin, path, release string) (VersionChange, bool) {
	for _, ch := range VersionChanges {
		if ch.Column == col && ch.Row == twin && ch.Path == path && (release == "" || ch.Release == release) {
			return ch, true
		}
	}
	return VersionChange{}, false
}

// VersionChangeVerdict is ch asserted on the cell measured by condition
// id: on the twin's side (release "", the installed one) its Installed
// outcome, on the version cell's its Changed one.
func VersionChangeVerdict(ch VersionChange, release, row, id string) Verdict {
	outcome, who := ch.Installed, "Gunicorn 23.0.0 (installed)"
	if release != "" {
		outcome, who = ch.Changed, "Gunicorn "+release
	}
	return Verdict{ID: strings.TrimPrefix(id, "matrix-") + "-every-" + outcome, Kind: Lab, Unit: "share", Check: Outcomes(id, outcome),
		Text: fmt.Sprintf("%s on %s %s under %s: every slow client's outcome is %q, where the other release's is %q: %s",
			who, row, pathText(ch.Path), ch.Column, outcome, map[bool]string{true: ch.Installed, false: ch.Changed}[release != ""], ch.Why)}
}
