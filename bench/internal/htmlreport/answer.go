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
	everywhere := map[string]bool{}
	for _, r := range m.Rows {
		everywhere[r.ID] = !r.Stack
	}
	var out []string
	for _, col := range m.Columns {
		// A column's direct path and NGINX-buffering-on path: the plain
		// ones, for slow TLS their TLS twins, for HTTP/2 NGINX's h2
		// listener (no direct path: no server here speaks HTTP/2).
		directID, onID, tls := "direct", "nginx-on", ""
		switch {
		case slices.Contains(col.Paths, "direct-tls"):
			directID, onID, tls = "direct-tls", "nginx-tls-on", " terminating TLS"
		case slices.Contains(col.Paths, "nginx-h2-on"):
			directID, onID, tls = "", "nginx-h2-on", " serving HTTP/2 over TLS"
		}
		direct := map[string][]string{}
		var onNot []string
		onRan, directRan := 0, false
		rows := 0
		for _, r := range m.Rows {
			if r.Stack || (len(col.Rows) > 0 && !slices.Contains(col.Rows, r.ID)) {
				continue
			}
			rows++
			for _, p := range col.Paths {
				if c, ok := class[[3]string{col.ID, r.ID, p}]; col.Runs(r.ID, p) && (!ok || c != report.ClassProtected) {
					everywhere[r.ID] = false
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
				parts = append(parts, fmt.Sprintf(" %s directly%s: %s", c, map[bool]string{true: " (their own TLS)"}[tls != ""], strings.Join(rows, ", ")))
			}
		}
		if len(parts) == 0 && directRan {
			parts = append(parts, " no setup stalled or failed directly")
		}
		switch {
		case onRan == 0:
		case len(onNot) == 0 && onRan == rows:
			parts = append(parts, " behind NGINX"+tls+" with proxy_buffering on, every setup protected")
		case len(onNot) == 0:
			parts = append(parts, fmt.Sprintf(" behind NGINX%s with proxy_buffering on, every setup this series ran there protected (%d of %d)", tls, onRan, rows))
		default:
			parts = append(parts, " behind NGINX"+tls+" with proxy_buffering on, not protected: "+strings.Join(onNot, ", "))
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
