package htmlreport

import (
	"fmt"
	"strings"

	"wsgilab/bench/internal/report"
)

// The exhaustion table (exhaustion.json): where NGINX's buffering stops
// protecting, each cell against the temp-file model's prediction.

type exhaustionView struct {
	Missing string
	Note    string
	Rule    string
	Rows    []exhaustionRow
}

type exhaustionRow struct {
	Condition, Readers, Size, Runs, P95           string
	Temp, PredTemp, Cut, PredCut, Write, PredHeld string
	Right, Class, Problem                         string
}

func buildExhaustion(e *report.Exhaustion) exhaustionView {
	var v exhaustionView
	if e == nil {
		v.Missing = "exhaustion.json is absent: " + notMeasured
		return v
	}
	v.Note = fmt.Sprintf("The temp-file model: behind proxy_buffering on a response of S bytes spills min(M, S − D) to NGINX's temp file, "+
		"M = proxy_max_temp_file_size (%s) and D what the path to the client held per download (%s, measured in %s); past M NGINX reads "+
		"no more of the upstream until its client has read the temp file, so the worker is held at least M / R; a temp directory of %s "+
		"holds floor(room / spill) spilling responses, and NGINX cuts the others short.",
		size(int64(e.Model.MaxTempBytes)), mibs(e.HeldBytesPerDownload), strings.Join(e.From, ", "), size(int64(e.Model.RoomBytes)))
	if e.Problem != "" {
		v.Missing = e.Problem
		return v
	}
	d := e.AtDefault
	v.Rule = fmt.Sprintf("At NGINX's default proxy_max_temp_file_size (%s) and %s/s, a response over %s holds its worker for at least %s, "+
		"and each spills up to %s to the temp directory.", size(int64(d.MaxTempBytes)), mibs(d.RateBytesPerS),
		size(int64(d.SmallestHeldBytes)), seconds(d.HeldS), size(int64(d.MaxTempBytes)))
	for _, c := range e.Cells {
		r := exhaustionRow{Condition: c.Condition, Readers: fmt.Sprint(c.Readers), Size: mib(c.SizeBytes), Runs: fmt.Sprint(c.Runs),
			P95: ms(c.P95Ms), PredTemp: num(c.PredictedTempPeakMiB) + " MiB", Cut: num(c.Cut), PredCut: fmt.Sprint(c.PredictedCut),
			Write: seconds(c.WriteS), PredHeld: "–", Right: "no", Class: "fail", Problem: c.Problem, Temp: "–"}
		if c.WriteS == 0 {
			r.Write = "–" // no valid run: every run cut a reader
		}
		if c.TempPeakMiB != nil {
			r.Temp = num(*c.TempPeakMiB) + " MiB"
		}
		if c.PredictedPast {
			r.PredHeld = "≥ " + seconds(c.PredictedHeldS)
		}
		if c.Right {
			r.Right, r.Class = "yes", "pass"
		}
		v.Rows = append(v.Rows, r)
	}
	return v
}
