package verdict

import (
	"fmt"

	"wsgilab/bench/internal/report"
)

// The streaming table's thresholds: a prompt stream's events arrive
// within PromptEventMs at the 95th percentile; a held one's first event
// waits over HeldEventMs (its stream lasts 5 s).
const (
	PromptEventMs = 50
	HeldEventMs   = 1000
)

// streamMetric reads the event stream of a condition's sound runs, which
// must have had every event.
func streamMetric(name string, f func(*report.Stream) float64) Metric {
	return Metric{Name: name, of: func(c report.Condition) (float64, error) {
		switch {
		case c.RunsSound == 0:
			return 0, fmt.Errorf("no sound run")
		case c.Stream == nil:
			return 0, fmt.Errorf("no event stream")
		case c.Stream.Events == 0 || c.Stream.Events != c.Stream.Expected:
			return 0, fmt.Errorf("%d of %d events arrived (%s)", c.Stream.Events, c.Stream.Expected, c.Stream.Error)
		}
		return f(c.Stream), nil
	}}
}

// The streaming metrics.
var (
	EventDelayP95   = streamMetric("event delay p95", func(s *report.Stream) float64 { return s.DelayP95Ms })
	FirstEventDelay = streamMetric("first event's delay", func(s *report.Stream) float64 { return s.FirstEventDelayMs })
)

// The streaming table's condition ids (engine.StreamTable; an engine
// test checks them).
const (
	streamDirect        = "stream-direct"
	streamNginxOn       = "stream-nginx-on"
	streamNginxOff      = "stream-nginx-off"
	streamXAccel        = "stream-nginx-on-xaccel-no"
	streamGzip          = "stream-nginx-on-gzip"
	streamGzipXAccel    = "stream-nginx-on-gzip-xaccel-no"
	streamGzipBufferOff = "stream-nginx-off-gzip"
)

// StreamIDs are the conditions Streaming reads.
var StreamIDs = []string{streamDirect, streamNginxOn, streamNginxOff, streamXAccel, streamGzip, streamGzipXAccel, streamGzipBufferOff}

// Streaming are the streaming table's verdicts: buffering alone does not
// hold a prompt reader's events back; buffering with gzip does, and
// X-Accel-Buffering: no or buffering off undoes it.
var Streaming = []Verdict{
	{ID: "stream-direct-prompt", Kind: Lab, Unit: "ms", Check: Below(streamDirect, EventDelayP95, PromptEventMs),
		Text: "directly, each event reaches the reader as it is sent: the sync worker writes each yielded event at once"},
	{ID: "stream-nginx-on-prompt", Kind: Lab, Unit: "ms", Check: Below(streamNginxOn, EventDelayP95, PromptEventMs),
		Text: "NGINX with proxy_buffering on does not hold a prompt reader's events: it passes on what it reads from upstream while the client's socket takes it"},
	{ID: "stream-nginx-off-prompt", Kind: Lab, Unit: "ms", Check: Below(streamNginxOff, EventDelayP95, PromptEventMs),
		Text: "NGINX with proxy_buffering off passes each event on at once"},
	{ID: "stream-xaccel-prompt", Kind: Lab, Unit: "ms", Check: Below(streamXAccel, EventDelayP95, PromptEventMs),
		Text: "X-Accel-Buffering: no from the app turns buffering off for the stream: each event passes at once"},
	{ID: "stream-gzip-holds-events", Kind: Lab, Unit: "ms", Check: Above(streamGzip, FirstEventDelay, HeldEventMs),
		Text: "buffering on with gzip holds the events back: gzip emits only when its buffer fills or the stream is flushed, and a buffered upstream is never flushed"},
	{ID: "stream-gzip-xaccel-prompt", Kind: Lab, Unit: "ms", Check: Below(streamGzipXAccel, EventDelayP95, PromptEventMs),
		Text: "with gzip, X-Accel-Buffering: no makes NGINX flush each read, and gzip flushes each event with it"},
	{ID: "stream-gzip-buffering-off-prompt", Kind: Lab, Unit: "ms", Check: Below(streamGzipBufferOff, EventDelayP95, PromptEventMs),
		Text: "with gzip and buffering off, each event is flushed through gzip at once"},
}
