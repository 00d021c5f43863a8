package htmlreport

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"wsgilab/bench/internal/report"
)

// answerView is the page's first screen: what the series found, in a few
// lines drawn from its own files, then every matrix cell at a glance, and
// how the verdicts stand.
type answerView struct {
	// Findings are the headline findings, most telling first.
	Findings []string
	Overview overviewView
	// Verdicts counts the verdicts, the ones meant to fail apart.
	Verdicts string
}

func buildAnswer(f *files, claims claimsView, overview overviewView) answerView {
	v := answerView{Overview: overview}
	for _, s := range f.stacks {
		v.Findings = append(v.Findings, stackFinding(s))
	}
	if line := articleAFinding(f.conditions); line != "" {
		v.Findings = append(v.Findings, line)
	}
	v.Findings = append(v.Findings, matrixFindings(f.matrix)...)
	if line := articleBFinding(f.throughput); line != "" {
		v.Findings = append(v.Findings, line)
	}
	if claims.Missing == "" {
		v.Verdicts = fmt.Sprintf("%d verdicts hold, %d fail", claims.Holds, claims.Fails)
		if claims.Expected > 0 {
			v.Verdicts += fmt.Sprintf(", %d fail as meant to (example stacks that show what the lab catches)", claims.Expected)
		}
		if claims.NotEval > 0 {
			v.Verdicts += fmt.Sprintf("; %d were not run in this series (folded away below)", claims.NotEval)
		}
		v.Verdicts += "."
	}
	return v
}

// stackFinding is a stack check's verdict in one line.
func stackFinding(s report.Stack) string {
	var texts []string
	for _, b := range s.Behaviours {
		texts = append(texts, fmt.Sprintf("%s (requires %d)", b.Text, b.Required))
	}
	for _, r := range s.Resets {
		texts = append(texts, r.Column+": "+r.Text)
	}
	return fmt.Sprintf("Stack %s (%s, %s): %s: %s.", s.Name, s.Server, s.Path, s.Verdict(), strings.Join(texts, "; "))
}

// articleAFinding is article A's headline: two slow downloads against two
// sync workers, directly and behind NGINX with buffering on.
func articleAFinding(cs []report.Condition) string {
	by := map[string]report.Condition{}
	for _, c := range cs {
		by[c.ID] = c
	}
	d, ok := by["direct-2dl"]
	if !ok || len(d.P95MsRuns) == 0 {
		return ""
	}
	line := "Article A: two slow downloads took /fast p95 against two Gunicorn sync workers"
	if z, ok := by["direct-0dl"]; ok && len(z.P95MsRuns) > 0 {
		line += " from " + ms(z.P95Ms)
	}
	line += " to " + ms(d.P95Ms) + articleOf(d)
	if n, ok := by["nginx-on-2dl"]; ok && len(n.P95MsRuns) > 0 {
		line += "; behind NGINX with proxy_buffering on it stayed at " + ms(n.P95Ms) + articleOf(n)
	}
	return line + "."
}

func articleOf(c report.Condition) string {
	if c.ArticleP95Ms > 0 {
		return " (article " + ms(c.ArticleP95Ms) + ")"
	}
	return ""
}

// matrixFindings are the matrix's headlines: per column, who stalled or
// failed directly and whether NGINX with buffering on protected every
// setup; then the setups protected in every cell.
func matrixFindings(m *report.Matrix) []string {
	if m == nil || len(m.Cells) == 0 {
		return nil
	}
	class := map[[3]string]string{}
	for _, c := range m.Cells {
		class[[3]string{c.Column, c.Row, c.Path}] = c.Class
	}
	// A row some columns skip by its own choice (a server added for one
	// protocol's column) is never "protected everywhere".
	everywhere := map[string]bool{}
	for _, r := range m.Rows {
		everywhere[r.ID] = !r.Stack && len(r.Only) == 0
	}
	cells := map[[3]string]report.MatrixCell{}
	// A fault column's cells are read by their own verdicts: a reset's
	// clients are cut on purpose, and a latency cell's /fast takes the
	// hop's round trip, so neither class says what the setup protects.
	faulted := map[string]bool{}
	for _, c := range m.Cells {
		cells[[3]string{c.Column, c.Row, c.Path}] = c
		faulted[c.Column] = faulted[c.Column] || c.Fault != ""
	}
	var out []string
	for _, col := range m.Columns {
		if faulted[col.ID] {
			continue
		}
		// A column's unshielded path and its NGINX path: direct and
		// buffering on; for slow TLS their TLS twins; for HTTP/2 NGINX's
		// h2 listener with buffering off and on (no server here speaks
		// HTTP/2 itself); for WebSockets NGINX passing the Upgrade on.
		directID, directText, onID, onText := "direct", "directly", "nginx-on", "behind NGINX with proxy_buffering on"
		switch {
		case slices.Contains(col.Paths, "direct-tls"):
			directID, directText, onID, onText = "direct-tls", "directly (their own TLS)", "nginx-tls-on", "behind NGINX terminating TLS with proxy_buffering on"
		case slices.Contains(col.Paths, "nginx-h2-on"):
			directID, directText = "nginx-h2-off", "behind NGINX's HTTP/2 listener with proxy_buffering off"
			onID, onText = "nginx-h2-on", "behind NGINX's HTTP/2 listener with proxy_buffering on"
		case slices.Contains(col.Paths, "nginx-ws"):
			onID, onText = "nginx-ws", "behind NGINX passing the WebSocket on"
		}
		var grew []string
		direct := map[string][]string{}
		var onNot []string
		onRan, directRan := 0, false
		rows := 0
		for _, r := range m.Rows {
			if r.Stack || (len(col.Rows) > 0 && !slices.Contains(col.Rows, r.ID)) || (len(r.Only) > 0 && !slices.Contains(r.Only, col.ID)) {
				continue
			}
			rows++
			for _, p := range col.Paths {
				if c, ok := class[[3]string{col.ID, r.ID, p}]; col.Runs(r.ID, p) && (!ok || c != report.ClassProtected) {
					everywhere[r.ID] = false
				}
			}
			for _, p := range col.Paths {
				if c, ok := cells[[3]string{col.ID, r.ID, p}]; ok && (c.SlowKind == wsKind || p == directH2ID) && c.AppMemoryGrowthMiB != nil && *c.AppMemoryGrowthMiB > unboundedGrowthMiB {
					grew = append(grew, fmt.Sprintf("%s %s (+%s MiB)", r.ID, p, num(*c.AppMemoryGrowthMiB)))
				}
			}
			if c, ok := class[[3]string{col.ID, r.ID, directID}]; ok {
				directRan = true
				if c == report.ClassStalled || c == report.ClassFailed {
					direct[c] = append(direct[c], r.ID)
				}
			}
			if c, ok := class[[3]string{col.ID, r.ID, onID}]; ok {
				onRan++
				if c != report.ClassProtected {
					onNot = append(onNot, r.ID+" ("+c+")")
				}
			}
		}
		line := fmt.Sprintf("%s, %d slow client%s:", col.ID, col.Clients, plural(col.Clients))
		var parts []string
		for _, c := range []string{report.ClassStalled, report.ClassFailed} {
			if rows := direct[c]; len(rows) > 0 {
				parts = append(parts, fmt.Sprintf(" %s %s: %s", c, directText, strings.Join(rows, ", ")))
			}
		}
		if len(parts) == 0 && directRan {
			parts = append(parts, " no setup stalled or failed "+directText)
		}
		switch {
		case onRan == 0:
		case len(onNot) == 0 && onRan == rows:
			parts = append(parts, " "+onText+", every setup protected")
		case len(onNot) == 0:
			parts = append(parts, fmt.Sprintf(" %s, every setup this series ran there protected (%d of %d)", onText, onRan, rows))
		default:
			parts = append(parts, " "+onText+", not protected: "+strings.Join(onNot, ", "))
		}
		if len(grew) > 0 {
			parts = append(parts, fmt.Sprintf(" the server's memory grew without a bound (over %g MiB): %s", float64(unboundedGrowthMiB), strings.Join(grew, ", ")))
		}
		if len(parts) > 0 {
			out = append(out, line+strings.Join(parts, ";")+".")
		}
	}
	var all []string
	for _, r := range m.Rows {
		if everywhere[r.ID] {
			all = append(all, r.ID)
		}
	}
	if len(all) > 0 {
		out = append(out, "Protected on every path under every slow client: "+strings.Join(all, ", ")+".")
	}
	return out
}

// articleBFinding is article B's headline: each server's rate with the
// blocking call, by our generator.
func articleBFinding(ts []report.Throughput) string {
	var rates []string
	blocking := 0
	for _, t := range ts {
		if t.Generator == "ours" && t.BlockingMs > 0 {
			rates = append(rates, fmt.Sprintf("%s %s", t.Server, rate(t.ReqPerS)))
			blocking = t.BlockingMs
		}
	}
	if len(rates) == 0 {
		return ""
	}
	return fmt.Sprintf("Article B: with a %d ms blocking call per request, req/s under ab -c 100's load (our generator's run of it): %s.", blocking, strings.Join(rates, ", "))
}

// ms is a p95 as the headlines print it: "1.45 ms", "42.1 ms", "5,973 ms".
func ms(v float64) string {
	switch {
	case v >= 100:
		return report.Thousands(v) + " ms"
	case v >= 10:
		return fmt.Sprintf("%.1f ms", v)
	}
	return fmt.Sprintf("%.2f ms", v)
}

// rate is a request rate: 9.9, 861.
func rate(v float64) string {
	if v >= 100 {
		return report.Thousands(v)
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// unboundedGrowthMiB is verdict.UnboundedGrowthMiB, the growth over which a
// WebSocket server kept no bound (the page links no verdict code; a
// test holds the two equal).
const unboundedGrowthMiB = 16

// wsKind is load.KindWS, the WebSocket consumers' slow kind, and
// directH2ID engine.DirectH2's id, a server speaking HTTP/2 itself: the
// cells whose server may queue what its clients have not read.
const (
	wsKind     = "ws-slow-consumer"
	directH2ID = "direct-h2"
)
