package engine

import (
	"slices"

	"wsgilab/bench/internal/load"
	"wsgilab/bench/internal/report"
	"wsgilab/bench/internal/stats"
)

// workerTimeoutLine is what Gunicorn's arbiter logs when it kills a
// worker that has not notified it within --timeout.
const workerTimeoutLine = "WORKER TIMEOUT"

// streamOf summarizes an event stream's reader's record; expected is how
// many events the app was asked for.
func streamOf(r load.StreamResult, expected int) *report.Stream {
	s := &report.Stream{Status: r.Status, Encoding: r.Encoding, Events: len(r.Events), Expected: expected, Error: r.Error}
	var d stats.Latencies
	for _, e := range r.Events {
		d.Add(e.Delay())
	}
	d.Close()
	s.DelayP50Ms, s.DelayP95Ms, s.DelayMaxMs = stats.Ms(d.P50), stats.Ms(d.P95), stats.Ms(d.Max)
	if len(r.Events) > 0 {
		s.FirstEventDelayMs = stats.Ms(r.Events[0].Delay())
	}
	return s
}

// foldStreams is a condition's stream over its runs' streams (nil when
// none read one): the events summed, the median of the runs' p50, p95 and
// first-event delays, the most of their max.
func foldStreams(runs []*report.Stream) *report.Stream {
	runs = slices.DeleteFunc(slices.Clone(runs), func(s *report.Stream) bool { return s == nil })
	if len(runs) == 0 {
		return nil
	}
	out := &report.Stream{Status: runs[0].Status, Encoding: runs[0].Encoding, DelayP95MsRuns: []float64{}}
	var p50, p95, first []float64
	for _, s := range runs {
		out.Events += s.Events
		out.Expected += s.Expected
		out.DelayMaxMs = max(out.DelayMaxMs, s.DelayMaxMs)
		p50, p95, first = append(p50, s.DelayP50Ms), append(p95, s.DelayP95Ms), append(first, s.FirstEventDelayMs)
		out.DelayP95MsRuns = append(out.DelayP95MsRuns, s.DelayP95Ms)
		if s.Error != "" && out.Error == "" {
			out.Error = s.Error
		}
	}
	out.DelayP50Ms, out.DelayP95Ms, out.FirstEventDelayMs = stats.Median(p50), stats.Median(p95), stats.Median(first)
	return out
}
