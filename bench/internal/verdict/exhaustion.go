package verdict

import (
	"fmt"
	"slices"

	"wsgilab/bench/internal/report"
)

// Outcomes of a slow client the limits verdicts tell apart (load's
// Outcome* names, which this package does not link).
const (
	// tempTolerance is buffermodel.TempTolerance, which the model's
	// fit applies (ExhaustionCell.Right); here for the verdict's text.
	tempTolerance = 0.10

	outcomeComplete    = "complete"
	outcomeTruncated   = "truncated"
	outcomeReset       = "reset"
	outcomeSilentShort = "silent-short"
)

// NoSilentShort holds when no slow client of the conditions ids, in any
// sound run, got a short body presented as whole (its framing ended
// cleanly before the bytes the app was asked for): every body cut short
// was detectable by the client. The measured value is the count of
// silent short bodies.
func NoSilentShort(ids ...string) Check { return silentCheck{ids} }

type silentCheck struct{ ids []string }

func (c silentCheck) Needs() []string { return c.ids }

func (c silentCheck) Eval(d Data) (Outcome, error) {
	silent, cut := 0, 0
	for _, id := range c.ids {
		s, ok := d.Conditions[id]
		if !ok {
			return Outcome{}, fmt.Errorf("%s: no summary", id)
		}
		if s.RunsSound == 0 || s.DownloadsTotal == 0 {
			return Outcome{}, fmt.Errorf("%s: no sound run with slow clients", id)
		}
		silent += s.SlowOutcomes[outcomeSilentShort]
		cut += s.SlowOutcomes[outcomeTruncated] + s.SlowOutcomes[outcomeReset]
	}
	return Outcome{Measured: float64(silent),
		Threshold: fmt.Sprintf("= 0 (%d bodies cut short, each detectably)", cut), Holds: silent == 0}, nil
}

// CutDetectably holds when every sound run of condition id cut at least
// one slow reader short, detectably (truncated, its Content-Length not
// met, or reset), and served the others whole: nothing timed out, was
// refused or cut silently. The measured value is the fewest readers cut
// in one sound run.
func CutDetectably(id string) Check { return cutCheck{id} }

type cutCheck struct{ id string }

func (c cutCheck) Needs() []string { return []string{c.id} }

func (c cutCheck) Eval(d Data) (Outcome, error) {
	s, ok := d.Conditions[c.id]
	if !ok {
		return Outcome{}, fmt.Errorf("%s: no summary", c.id)
	}
	if s.RunsSound == 0 || s.DownloadsTotal != s.RecordsPerRun()*s.RunsSound {
		return Outcome{}, fmt.Errorf("%s: %w", c.id, errNoClass)
	}
	cut := s.SlowOutcomes[outcomeTruncated] + s.SlowOutcomes[outcomeReset]
	other := s.DownloadsTotal - cut - s.SlowOutcomes[outcomeComplete]
	return Outcome{Measured: float64(s.CutMin), Threshold: fmt.Sprintf(">= 1 in every run (%d in all), and every other reader whole (other outcomes: %d)", cut, other),
		Holds: s.CutMin >= 1 && other == 0}, nil
}

// FastServed holds when /fast was served beside slow clients a limit cut
// short, and never waited for a held worker: every /fast request of the
// sound runs served, and the median of their p95 under limitMs.
func FastServed(id string, limitMs float64) Check { return fastCheck{id, limitMs} }

type fastCheck struct {
	id      string
	limitMs float64
}

func (c fastCheck) Needs() []string { return []string{c.id} }

func (c fastCheck) Eval(d Data) (Outcome, error) {
	s, ok := d.Conditions[c.id]
	if !ok {
		return Outcome{}, fmt.Errorf("%s: no summary", c.id)
	}
	if s.RunsSound == 0 || s.RequestsTotal == 0 {
		return Outcome{}, fmt.Errorf("%s: no sound run with /fast requests", c.id)
	}
	failed := s.RequestsTotal - s.RequestsOK
	return Outcome{Measured: s.P95MsSound, Threshold: fmt.Sprintf("< %g ms, every /fast request served (failed: %d)", c.limitMs, failed),
		Holds: failed == 0 && s.P95MsSound < c.limitMs}, nil
}

// FullTempFastMs bounds /fast's p95 beside a full temp directory: the
// matrix's stall line. NGINX, on a fifth of a core, spills 80 MiB in the
// window's first second, and /fast waits for its loop: p95 1.3 to
// 18.7 ms over 8 runs of 8 readers on an Intel Xeon, 3.7 to 134 ms over
// 11 on an AMD EPYC, where the first requests waited up to 0.73 s
// (reports/measurements.md). A held worker makes it seconds
// (temp-limit-past-stalls: 18.8 to 20.5 s).
const FullTempFastMs = StalledMs

// TempModelRight holds when the temp-file model (Data.Exhaustion)
// predicted each of the cells ids right: the temp-file peak within its
// tolerance, the readers cut short exactly, a worker past the limit held
// at least the predicted time. The measured value is the share right.
// fit are the conditions the model is fitted on besides the cells.
func TempModelRight(ids, fit []string) Check { return tempModelCheck{ids, fit} }

type tempModelCheck struct{ ids, fit []string }

func (c tempModelCheck) Needs() []string { return slices.Concat(c.ids, c.fit) }

func (c tempModelCheck) Eval(d Data) (Outcome, error) {
	if d.Exhaustion == nil {
		return Outcome{}, fmt.Errorf("no temp-file model fit")
	}
	if d.Exhaustion.Problem != "" {
		return Outcome{}, fmt.Errorf("temp-file model: %s", d.Exhaustion.Problem)
	}
	right := 0
	var wrong []string
	for _, id := range c.ids {
		i := slices.IndexFunc(d.Exhaustion.Cells, func(l report.ExhaustionCell) bool { return l.Condition == id })
		if i < 0 {
			return Outcome{}, fmt.Errorf("%s: not in the temp-file model's fit", id)
		}
		l := d.Exhaustion.Cells[i]
		if l.Problem != "" {
			return Outcome{}, fmt.Errorf("%s: %s", id, l.Problem)
		}
		if l.Right {
			right++
		} else {
			wrong = append(wrong, id)
		}
	}
	th := fmt.Sprintf("= 1 (%d cells)", len(c.ids))
	if len(wrong) > 0 {
		th += fmt.Sprintf("; wrong: %v", wrong)
	}
	return Outcome{Measured: float64(right) / float64(len(c.ids)), Threshold: th, Holds: right == len(c.ids)}, nil
}

// ExhaustionIDs name the exhaustion table's cells for its verdicts.
type ExhaustionIDs struct {
	// Below, At and Past are the temp-limit cells under, at and past
	// proxy_max_temp_file_size; FullTemp the full temp directory's.
	Below, At, Past, FullTemp string
	// Fit are the conditions besides the table the temp-file model is
	// fitted on (article A's nginx-on-2dl).
	Fit []string
}

// Exhaustion are the exhaustion table's verdicts. heldS is how long a
// worker past the temp-file limit is held at least, the limit over the
// read rate, and heldShare the share of it the verdict asks for
// (buffermodel.Temp, HeldShare). scaleStep is the scale column's step
// make test asserts (Uvicorn's two workers under 256 slow mobile
// readers).
func Exhaustion(ids ExhaustionIDs, heldS, heldShare float64, scaleStep string) []Verdict {
	return []Verdict{
		{ID: "temp-limit-below-protected", Kind: Lab, Unit: "ms", Check: Protected(ids.Below),
			Text: "responses under proxy_max_temp_file_size (24 MiB under 32m) keep /fast protected behind NGINX buffering on"},
		{ID: "temp-limit-at-protected", Kind: Lab, Unit: "ms", Check: Protected(ids.At),
			Text: "a response of the limit's own size (32 MiB under 32m) still fits: what the path to the client holds comes off the spill"},
		{ID: "temp-limit-past-stalls", Kind: Lab, Unit: "ms", Check: Stalls(ids.Past),
			Text: "past proxy_max_temp_file_size (48 MiB under 32m) buffering on no longer protects: two slow readers stall /fast"},
		{ID: "temp-limit-past-holds-worker", Kind: Lab, Unit: "s", Check: Above(ids.Past, WriteS, heldShare*heldS),
			Text: fmt.Sprintf("past the limit NGINX reads no more of the upstream until its client has read the temp file: the worker is held at least the limit over the read rate (%.0f s), a cliff, not a slope", heldS)},
		{ID: "full-temp-cuts-readers-short", Kind: Lab, Unit: "readers per run", Check: CutDetectably(ids.FullTemp),
			Text: "when the temp directory fills (8 slow readers of 16 MiB, an 80 MiB tmpfs), NGINX ends the responses it has no room for short, detectably, and serves the others whole"},
		{ID: "full-temp-fast-protected", Kind: Lab, Unit: "ms", Check: FastServed(ids.FullTemp, FullTempFastMs),
			Text: "a full temp directory costs the readers it cuts, not /fast: no worker is held, and /fast waits only for NGINX's own spilling, never to the stall line"},
		{ID: "no-silent-short-body", Kind: Harness, Unit: "bodies", Check: NoSilentShort(ids.Past, ids.FullTemp),
			Text: "no slow reader past a limit got a short body presented as whole: every body cut short was a Content-Length not met or a reset"},
		{ID: "temp-model-predicts-the-cliffs", Kind: Lab, Unit: "share", Check: TempModelRight([]string{ids.Past, ids.FullTemp}, ids.Fit),
			Text: "the temp-file model, fitted on the cells that spilled under the limit, predicts the cell past it (its worker held) and the full temp directory (how many readers are cut)"},
		{ID: "uvicorn-holds-256-slow-mobile-readers", Kind: Lab, Unit: "ms", Check: Protected(scaleStep),
			Text: "Uvicorn's two workers keep /fast protected beside 256 slow mobile readers of 384 KiB at 16 KiB/s, each holding a coroutine in its send for 20 s"},
		{ID: "temp-model-predicts-the-spill", Kind: Lab, Unit: "share", Check: TempModelRight([]string{ids.Below, ids.At}, ids.Fit),
			Text: fmt.Sprintf("the temp-file model predicts the temp-file peak under the limit within %.0f %%, each cell from the others", 100*tempTolerance)},
	}
}
