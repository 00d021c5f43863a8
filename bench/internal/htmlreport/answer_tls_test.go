package htmlreport

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	loadpkg "wsgilab/bench/internal/load"
	"wsgilab/bench/internal/report"
	"wsgilab/bench/internal/verdict"
)

// The slow-TLS column's headline reads its own TLS paths: who stalled
// with their own TLS, and NGINX terminating TLS with buffering on.
func TestMatrixFindingsTLS(t *testing.T) {
	m := &report.Matrix{
		Columns: []report.MatrixColumn{{ID: "slow-tls", Clients: 2, Paths: []string{"direct-tls", "nginx-tls-off", "nginx-tls-on"}}},
		Rows:    []report.MatrixRow{{ID: "gunicorn-sync-2"}, {ID: "uvicorn-2"}},
		Cells: []report.MatrixCell{
			{Column: "slow-tls", Row: "gunicorn-sync-2", Path: "direct-tls", Class: report.ClassStalled},
			{Column: "slow-tls", Row: "gunicorn-sync-2", Path: "nginx-tls-on", Class: report.ClassProtected},
			{Column: "slow-tls", Row: "uvicorn-2", Path: "direct-tls", Class: report.ClassProtected},
			{Column: "slow-tls", Row: "uvicorn-2", Path: "nginx-tls-on", Class: report.ClassProtected},
		},
	}
	got := strings.Join(matrixFindings(m), "\n")
	assert.Contains(t, got, "slow-tls, 2 slow clients: stalled directly (their own TLS): gunicorn-sync-2; behind NGINX terminating TLS with proxy_buffering on, every setup protected.")
}

// The HTTP/2 column's headline reads NGINX's h2 listener, buffering off
// and on, and names a server speaking HTTP/2 itself whose memory grew
// without a bound; the WebSocket column's names the one that did so
// under its consumers; a row added for one column is never "protected
// on every path".
func TestMatrixFindingsHTTP2AndWebSockets(t *testing.T) {
	grew, held, h2grew := 39.5, 0.5, 78.6
	m := &report.Matrix{
		Columns: []report.MatrixColumn{
			{ID: "h2-slow-read", Clients: 2, Paths: []string{"nginx-h2-off", "nginx-h2-on", "direct-h2"}, Only: map[string][]string{"direct-h2": {"hypercorn-2"}}},
			{ID: "ws-slow-consumer", Clients: 2, Paths: []string{"direct", "nginx-ws"}, Rows: []string{"uvicorn-2", "daphne-1"}},
		},
		Rows: []report.MatrixRow{{ID: "gunicorn-sync-2"}, {ID: "uvicorn-2"}, {ID: "daphne-1", Only: []string{"ws-slow-consumer"}}, {ID: "hypercorn-2", Only: []string{"h2-slow-read"}}},
		Cells: []report.MatrixCell{
			{Column: "h2-slow-read", Row: "gunicorn-sync-2", Path: "nginx-h2-off", Class: report.ClassStalled},
			{Column: "h2-slow-read", Row: "gunicorn-sync-2", Path: "nginx-h2-on", Class: report.ClassProtected},
			{Column: "h2-slow-read", Row: "uvicorn-2", Path: "nginx-h2-off", Class: report.ClassProtected},
			{Column: "h2-slow-read", Row: "uvicorn-2", Path: "nginx-h2-on", Class: report.ClassProtected},
			{Column: "h2-slow-read", Row: "hypercorn-2", Path: "nginx-h2-off", Class: report.ClassProtected, SlowKind: "h2-slow-read", AppMemoryGrowthMiB: &held},
			{Column: "h2-slow-read", Row: "hypercorn-2", Path: "nginx-h2-on", Class: report.ClassProtected, SlowKind: "h2-slow-read", AppMemoryGrowthMiB: &held},
			{Column: "h2-slow-read", Row: "hypercorn-2", Path: "direct-h2", Class: report.ClassSlowed, SlowKind: "h2-slow-read", AppMemoryGrowthMiB: &h2grew},
			{Column: "ws-slow-consumer", Row: "uvicorn-2", Path: "direct", Class: report.ClassProtected, SlowKind: "ws-slow-consumer", AppMemoryGrowthMiB: &held},
			{Column: "ws-slow-consumer", Row: "uvicorn-2", Path: "nginx-ws", Class: report.ClassProtected, SlowKind: "ws-slow-consumer", AppMemoryGrowthMiB: &held},
			{Column: "ws-slow-consumer", Row: "daphne-1", Path: "direct", Class: report.ClassProtected, SlowKind: "ws-slow-consumer", AppMemoryGrowthMiB: &grew},
			{Column: "ws-slow-consumer", Row: "daphne-1", Path: "nginx-ws", Class: report.ClassProtected, SlowKind: "ws-slow-consumer", AppMemoryGrowthMiB: &held},
		},
	}
	got := strings.Join(matrixFindings(m), "\n")
	assert.Contains(t, got, "h2-slow-read, 2 slow clients: stalled behind NGINX's HTTP/2 listener with proxy_buffering off: gunicorn-sync-2; behind NGINX's HTTP/2 listener with proxy_buffering on, every setup protected; the server's memory grew without a bound (over 16 MiB): hypercorn-2 direct-h2 (+78.6 MiB).")
	assert.Contains(t, got, "ws-slow-consumer, 2 slow clients: no setup stalled or failed directly; behind NGINX passing the WebSocket on, every setup protected; the server's memory grew without a bound (over 16 MiB): daphne-1 direct (+39.5 MiB).")
	assert.Contains(t, got, "Protected on every path under every slow client: uvicorn-2.")
	assert.NotContains(t, got, "uvicorn-2, daphne-1.", "daphne-1 runs one column only")
	assert.EqualValues(t, verdict.UnboundedGrowthMiB, unboundedGrowthMiB)
	assert.Equal(t, loadpkg.KindWS, wsKind)
}
