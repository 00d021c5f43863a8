package htmlreport

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"wsgilab/bench/internal/report"
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
