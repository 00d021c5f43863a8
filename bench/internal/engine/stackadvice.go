package engine

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"wsgilab/bench/internal/report"
	"wsgilab/fixtures"
)

// pathPhrases name the matrix's paths in advice.
var pathPhrases = map[string]string{
	Direct.ID:              "direct",
	NginxOff.ID:            "behind NGINX with proxy_buffering off",
	NginxOn.ID:             "behind NGINX with proxy_buffering on",
	NginxOnStreamedBody.ID: "behind NGINX with proxy_buffering on but proxy_request_buffering off",
	"nginx-custom":         "behind your NGINX config",
	NginxIngress.ID:        "behind NGINX at the ingress-nginx controller's defaults",
	NginxReadAhead1M.ID:    "behind NGINX reading about 1 MiB of each response ahead",
	Varnish.ID:             "behind Varnish passing every request",
	DirectTLS.ID:           "direct, your server terminating TLS itself",
	NginxTLSOff.ID:         "behind NGINX terminating TLS, proxy_buffering off",
	NginxTLSOn.ID:          "behind NGINX terminating TLS, proxy_buffering on",
	"nginx-tls-custom":     "behind your NGINX config terminating TLS",
	NginxWS.ID:             "behind NGINX passing the WebSocket Upgrade on",
	NginxH2Off.ID:          "behind NGINX serving HTTP/2 over TLS, proxy_buffering off",
	NginxH2On.ID:           "behind NGINX serving HTTP/2 over TLS, proxy_buffering on",
	NginxH2COff.ID:         "behind NGINX serving HTTP/2 by prior knowledge (h2c), proxy_buffering off",
	NginxH2COn.ID:          "behind NGINX serving HTTP/2 by prior knowledge (h2c), proxy_buffering on",
	DirectH2.ID:            "direct, your server speaking HTTP/2 over its own TLS",
	"nginx-h2-custom":      "behind your NGINX config serving HTTP/2 over TLS",
}

// pathPhrase names path id in advice: pathPhrases', or the front door
// and its preset ("behind haproxy at its packaged defaults", "behind
// caddy at its buffered preset", "behind your haproxy config").
func pathPhrase(id string) string {
	if p, ok := pathPhrases[id]; ok {
		return p
	}
	if kind, ok := strings.CutSuffix(id, "-custom"); ok {
		return "behind your " + kind + " config"
	}
	kind, preset, _ := strings.Cut(id, "-")
	if preset == "" {
		return "behind " + kind + " at its packaged defaults"
	}
	return "behind " + kind + " at its " + preset + " preset"
}

// StackAdvice is one sentence for st, taken from the matrix m: for each
// behaviour that failed, where the stack stalled and what protected every
// cell of that column in m, and for each reset that failed, what the cut
// left held; for a stack that passed, what held.
func StackAdvice(st report.Stack, m *report.Matrix) string {
	who := fmt.Sprintf("Your stack (%s, %s)", st.Server, pathPhrase(st.Path))
	switch st.Baseline.State {
	case StateNoData:
		return fmt.Sprintf("The lab could not measure %s with no slow client (no sound run of its baseline): see runs.json's invalid reasons; nothing about the stack follows.",
			strings.TrimPrefix(who, "Your stack "))
	case StateBroken:
		return fmt.Sprintf("%s misses %g ms at p95, or fails a request, with no slow client at all: fix the fast path first.", who, st.FastP95Ms)
	}
	var failed, held, unknown []string
	for _, b := range st.Behaviours {
		if b.Pass {
			held = append(held, b.Text)
			continue
		}
		if b.NoData {
			unknown = append(unknown, b.Text)
			continue
		}
		clause := b.Text
		if st.CapacityDeclared && b.StallsAt == st.Capacity && !strings.HasPrefix(st.Path, "nginx") {
			clause += fmt.Sprintf(", its capacity (%s): each held a request slot", st.Basis)
		}
		if p := protectors(m, b.Column, b.Noun); p != "" {
			clause += "; " + p
		}
		failed = append(failed, clause)
	}
	for _, r := range st.Resets {
		switch {
		case r.Pass:
			what, _, _ := strings.Cut(r.Text, ":") // "lets go of 2 slow readers cut at 4 MiB"
			held = append(held, what)
		case r.NoData:
			unknown = append(unknown, r.Column+": "+r.Text)
		default:
			failed = append(failed, r.Text)
		}
	}
	if len(failed) == 0 && len(unknown) > 0 {
		return fmt.Sprintf("The lab could not decide every requirement of %s: %s; nothing about the stack follows from those.",
			strings.TrimPrefix(who, "Your stack "), strings.Join(unknown, "; "))
	}
	if len(failed) == 0 {
		s := fmt.Sprintf("%s held every requirement: %s", who, strings.Join(held, ", "))
		b := st.Behaviours[0]
		if p := protectors(m, b.Column, b.Noun); st.Path != Direct.ID && strings.Contains(p, strings.TrimPrefix(pathPhrase(st.Path), "behind ")+" kept") {
			s += "; " + p
		}
		return s + "."
	}
	return fmt.Sprintf("%s %s.", who, strings.Join(failed, "; and "))
}

// protectors says what protected every cell of column col in m ("in our
// matrix, NGINX with proxy_buffering on kept every server setup protected
// from 2 slow readers, and uvicorn-2 was protected on every path"): the
// paths on which every row was protected, then the rows protected on
// every path (a framework row's server is named by its twin); empty when
// m has no such column or nothing protected all.
func protectors(m *report.Matrix, col, noun string) string {
	if m == nil {
		return ""
	}
	i := slices.IndexFunc(m.Columns, func(c report.MatrixColumn) bool { return c.ID == col })
	if i < 0 {
		return ""
	}
	column := m.Columns[i]
	cells := map[[2]string]string{}
	for _, c := range m.Cells {
		if c.Column == col {
			cells[[2]string{c.Row, c.Path}] = c.Class
		}
	}
	rows := column.Rows
	if len(rows) == 0 {
		for _, r := range m.Rows {
			rows = append(rows, r.ID)
		}
	}
	// every is true when every one of keys ran and was protected.
	every := func(keys [][2]string) bool {
		for _, k := range keys {
			if cells[k] != report.ClassProtected {
				return false
			}
		}
		return len(keys) > 0
	}
	// twin rows (a framework's, a Gunicorn release's) say what their
	// server's row says.
	twin := map[string]bool{}
	for _, r := range m.Rows {
		twin[r.ID] = r.Twin != ""
	}
	var paths, setups []string
	// excepted are the paths that protected every row but a few it only
	// slowed (p95 between the lines, nothing failed), with those rows:
	// servers that spend their own CPU on the responses the path takes
	// at once (verdict's nginxOnNoStall).
	type excepted struct {
		path string
		rows []string
	}
	var but []excepted
	for _, p := range column.Paths {
		if p == Direct.ID {
			continue
		}
		var keys [][2]string
		var slowed []string
		stalled := false
		for _, r := range rows {
			if !column.Runs(r, p) {
				continue
			}
			keys = append(keys, [2]string{r, p})
			switch cells[[2]string{r, p}] {
			case report.ClassProtected:
			case report.ClassSlowed:
				slowed = append(slowed, r)
			default:
				stalled = true
			}
		}
		switch {
		case every(keys):
			paths = append(paths, strings.TrimPrefix(pathPhrase(p), "behind "))
		case len(keys) > 0 && !stalled && len(slowed) <= MaxAdviceExceptions:
			but = append(but, excepted{strings.TrimPrefix(pathPhrase(p), "behind "), slowed})
		}
	}
	for _, r := range rows {
		if twin[r] {
			continue // its server's row says it
		}
		var keys [][2]string
		for _, p := range column.Paths {
			if column.Runs(r, p) {
				keys = append(keys, [2]string{r, p})
			}
		}
		if every(keys) {
			setups = append(setups, r)
		}
	}
	var parts []string
	if len(paths) > 0 {
		parts = append(parts, fmt.Sprintf("%s kept every server setup protected from %d %s", strings.Join(paths, " or "), column.Clients, noun))
	}
	for _, b := range but {
		parts = append(parts, fmt.Sprintf("%s kept every server setup protected from %d %s but %s, which it kept under the stall line",
			b.path, column.Clients, noun, list(b.rows)))
	}
	switch len(setups) {
	case 0:
	case 1:
		parts = append(parts, setups[0]+" was protected on every path")
	default:
		parts = append(parts, list(setups)+" were protected on every path")
	}
	if len(parts) == 0 {
		return ""
	}
	return "in our matrix, " + strings.Join(parts, ", and ")
}

// MaxAdviceExceptions is how many server setups a path may only slow
// (p95 between the protected and the stall lines, nothing failed) and
// still be named as what protected the others, with those setups named
// as exceptions.
const MaxAdviceExceptions = 2

// list joins "a", "a and b", "a, b and c".
func list(xs []string) string {
	if len(xs) < 2 {
		return strings.Join(xs, "")
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " and " + xs[len(xs)-1]
}

// OurMatrix is the matrix of the series in fixtures/report, the one the
// README's protection section shows.
func OurMatrix() (*report.Matrix, error) {
	var m report.Matrix
	if err := json.Unmarshal(fixtures.Matrix, &m); err != nil {
		return nil, fmt.Errorf("engine: fixtures' matrix.json: %w", err)
	}
	return &m, nil
}
