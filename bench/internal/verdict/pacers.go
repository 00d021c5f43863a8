package verdict

import (
	"fmt"
	"math"
	"slices"
)

// ToxiproxyTwinID is the id of condition id's twin whose downloads
// Toxiproxy paces (engine.PacerToxiproxy) instead of the lab's reader.
func ToxiproxyTwinID(id string) string { return id + "-toxiproxy" }

// PacersAgree holds when m of condition a, paced by a second instrument,
// is within tol of m of condition b, paced by the lab's own reader:
// |a/b - 1| <= tol. The measured value is a/b.
func PacersAgree(a, b string, m Metric, tol float64) Check {
	return condCheck{[]string{a, b}, m, func(v []float64) Outcome {
		r := v[0] / v[1]
		return Outcome{r, fmt.Sprintf("within %g of 1 (%s: %.4g)", tol, b, v[1]), v[1] > 0 && math.Abs(r-1) <= tol}
	}, true}
}

// PacersTolerance is how far from the lab's pacer a second instrument's
// figures may be: the same margin as the generator cross-check's
// OursVsABTolerance, as issue 34 asks of it, and a constant of its own
// so that either can move apart. reports/measurements.md has the
// distribution behind it (Toxiproxy against the lab's reader on
// direct-2dl) and a reader paced at twice the rate, which it fails.
const PacersTolerance = 0.25

// pacersOf are the cross-check's verdicts for article A's cell id, each
// read on its Toxiproxy-paced twin: fast is the cell's own /fast verdict
// (its class: stalled or not), write the app's write time (a ratio to
// the lab's where the worker is held for seconds, a bound where it is
// freed at once), and the client's completion time, a ratio.
func pacersOf(id, what string, fast, write Check, writeUnit string) []Verdict {
	twin := ToxiproxyTwinID(id)
	return []Verdict{
		{ID: "pacers-fast-" + id, Kind: Harness, Unit: "ms", Check: fast,
			Text: fmt.Sprintf("paced by Toxiproxy's bandwidth toxic, %s %s, as under the lab's reader", id, what)},
		{ID: "pacers-write-" + id, Kind: Harness, Unit: writeUnit, Check: write,
			Text: fmt.Sprintf("the app's write time on %s agrees between Toxiproxy's pacing and the lab's", id)},
		{ID: "pacers-completion-" + id, Kind: Harness, Unit: "x", Check: PacersAgree(twin, id, CompletionS, PacersTolerance),
			Text: fmt.Sprintf("the client's completion time on %s agrees between Toxiproxy's pacing and the lab's (16 MiB at 2 MiB/s)", id)},
	}
}

// Pacers are the pacer cross-check's verdicts, asserted in
// TestPacers/claims/<id>: article A's slow-reader cells, each paced by
// Toxiproxy (engine.PacerToxiproxy), against the same cells paced by the
// lab's reader. The /fast verdicts are the article's own thresholds
// (ArticleA).
var Pacers = slices.Concat(
	pacersOf("direct-2dl", "stalls /fast", Above(ToxiproxyTwinID("direct-2dl"), P95, 1000),
		PacersAgree(ToxiproxyTwinID("direct-2dl"), "direct-2dl", WriteS, PacersTolerance), "x"),
	pacersOf("nginx-off-2dl", "does not bring /fast back to idle behind NGINX buffering off", Above(ToxiproxyTwinID("nginx-off-2dl"), P95, 100),
		PacersAgree(ToxiproxyTwinID("nginx-off-2dl"), "nginx-off-2dl", WriteS, PacersTolerance), "x"),
	pacersOf("nginx-on-2dl", "keeps /fast fast behind NGINX buffering on", Below(ToxiproxyTwinID("nginx-on-2dl"), P95, 10),
		Below(ToxiproxyTwinID("nginx-on-2dl"), WriteS, 0.5), "s"),
)
