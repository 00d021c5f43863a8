package engine

import (
	"slices"

	"wsgilab/bench/internal/podspec"
	"wsgilab/bench/internal/verdict"
)

// The version axis (issue 33): teams on Debian bookworm run its own
// Gunicorn, 20.1.0, not article A's 23.0.0. Every Gunicorn row runs again
// under 20.1.0 (podspec.WithGunicorn), under every column its 23.0.0
// twin runs, on every path but the front doors beyond NGINX. Each version cell is asserted under its twin's rule
// (verdict.VersionVerdict): a verdict that changed between releases would
// fail there, and would take a rule of its own, named in VersionChanges.

// VersionRows are the version rows of servers: each Gunicorn row's
// server run by Gunicorn release (podspec.GunicornReleases), with its
// twin's concurrency, basis, columns and protocols.
func VersionRows(servers []Row, release string) []Row {
	var out []Row
	for _, twin := range servers {
		if twin.Framework != "" || !isGunicorn(twin.Server) {
			continue
		}
		s, err := podspec.WithGunicorn(twin.Server, release)
		if err != nil {
			panic(err)
		}
		out = append(out, Row{ID: s.ID, Server: s, Concurrency: twin.Concurrency, Basis: twin.Basis, WebSocket: twin.WebSocket,
			Only: slices.Clone(twin.Only), Paths: versionPaths(twin), HoldsBodies: twin.HoldsBodies, Twin: twin.ID, Gunicorn: release})
	}
	return out
}

// versionPaths are the paths of twin's (Row.Paths, or every column's)
// but the front doors beyond NGINX (FrontDoors, UploadDoors): those are
// the front doors' table, which the installed release answers for.
func versionPaths(twin Row) []string {
	doors := map[string]bool{}
	for _, p := range slices.Concat(FrontDoors, UploadDoors) {
		doors[p.ID] = true
	}
	var out []string
	for _, col := range MatrixColumns {
		for _, p := range col.paths() {
			if !doors[p.ID] && !slices.Contains(out, p.ID) && (twin.Paths == nil || slices.Contains(twin.Paths, p.ID)) {
				out = append(out, p.ID)
			}
		}
	}
	return out
}

// isGunicorn is whether s is Gunicorn's command line (python3 -m gunicorn).
func isGunicorn(s podspec.Server) bool {
	return len(s.Cmd) > 2 && s.Cmd[0] == "python3" && s.Cmd[2] == "gunicorn"
}

// versionVerdicts are version cell c's verdicts on row r: its twin's
// rule on the same column and path (the slow readers' SlowReadRules,
// else CellRules), held by the release r runs (verdict.VersionVerdict),
// with that rule's companions, and what differs there between the
// releases (verdict.VersionChanges).
func versionVerdicts(c MatrixCell, r Row) []verdict.Verdict {
	rule, ok := verdict.TwinRule(c.Column, r.Twin, c.Path)
	if !ok {
		panic("engine: no rule of twin " + r.Twin + " for version cell " + c.Condition.ID)
	}
	vs := []verdict.Verdict{verdict.VersionVerdict(rule, r.Gunicorn, r.ID, r.Twin, c.Path, c.Condition.ID)}
	vs = append(vs, verdict.Companions(rule, r.ID, c.Path, c.Condition.ID)...)
	if ch, ok := verdict.ChangeFor(c.Column, r.Twin, c.Path, r.Gunicorn); ok {
		vs = append(vs, verdict.VersionChangeVerdict(ch, r.Gunicorn, r.ID, c.Condition.ID))
	}
	if c.Column == WSSlowConsumer.ID {
		vs = append(vs, verdict.EveryMessage(r.ID, c.Path, c.Condition.ID))
	}
	return vs
}
