package engine

import (
	"wsgilab/bench/internal/load"
	"wsgilab/bench/internal/podspec"
	"wsgilab/nginxconf"
)

// The streaming table: one event stream (SSE) read by a prompt reader
// beside /fast, directly and through NGINX under the settings that decide
// whether NGINX holds events back. The app (2 Gunicorn sync workers)
// sends StreamEvents events StreamGapMs apart, each carrying its send
// time; the reader stamps each arrival.

// The stream of every condition of the table: an event every 100 ms for
// 5 s, beside /fast at 8/s for as long (StreamFastRequests; the table's
// verdicts read the events, /fast only shows the server stayed up).
const (
	StreamEvents       = 50
	StreamGapMs        = 100
	StreamFastRequests = StreamEvents * StreamGapMs * load.DefaultFastRate / 1000
)

// StreamID is a streaming condition's id: stream-<path>[-xaccel-no].
func StreamID(p Path, xaccelNo bool) string {
	id := "stream-" + p.ID
	if xaccelNo {
		id += "-xaccel-no"
	}
	return id
}

func gzipPath(buffering bool) Path {
	p := nginxPath(buffering)
	return NginxPath(p.ID+"-gzip", nginxconf.New(nginxconf.WithBuffering(buffering), nginxconf.WithGzip(true)))
}

// NginxOnGzip and NginxOffGzip are NGINX with buffering on or off and
// gzip on for text/event-stream.
var (
	NginxOnGzip  = gzipPath(true)
	NginxOffGzip = gzipPath(false)
)

// StreamTable is the streaming table's conditions.
var StreamTable = func() []Condition {
	var out []Condition
	for _, v := range []struct {
		p        Path
		xaccelNo bool
	}{
		{Direct, false}, {NginxOn, false}, {NginxOff, false}, {NginxOn, true},
		{NginxOnGzip, false}, {NginxOnGzip, true}, {NginxOffGzip, false},
	} {
		out = append(out, Condition{ID: StreamID(v.p, v.xaccelNo), Server: podspec.GunicornSync(2), Path: v.p, TCP: Stock,
			FastRequests: StreamFastRequests, Stream: &Stream{Events: StreamEvents, GapMs: StreamGapMs, XAccelNo: v.xaccelNo, AcceptGzip: true}})
	}
	return out
}()
