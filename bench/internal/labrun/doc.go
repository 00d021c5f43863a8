// Package labrun is the lab's run side: a Lab runs a condition (RunA), an
// article B cell (CellB, RoundsB) or a team's stack check (CheckStack) in
// fresh pods through the stack package, under the safety stop, and hands
// each raw record to the series' engine.Reports and engine.Journal. It is
// the one place a condition is run: package bench's tests and benchmarks
// drive it. The summary side (package engine) never imports it.
package labrun
