package bench

import (
	"testing"

	"wsgilab/bench/internal/engine"
)

// TestStream runs the streaming table (engine.StreamTable: an event every
// 100 ms for 5 s, read promptly, directly and through NGINX with
// buffering on or off, X-Accel-Buffering: no, and gzip), then asserts its
// verdicts (verdict.Streaming) in TestStream/claims/<id>.
//
//	go test ./bench -run 'TestStream/stream-nginx-on-gzip$' -v
func TestStream(t *testing.T) {
	plan := lab.Settings.Plan()
	runConditions(t, plan.Streams, func(engine.Condition) int { return plan.StreamRuns }, soundRun, false)
	assertTable(t, engine.TableStream)
}
