package engine

import (
	"wsgilab/bench/internal/report"
	"wsgilab/bench/internal/verdict"
)

// twinPair is a matrix cell of a twin row (a framework's or a Gunicorn
// release's) and its twin's cell, both summarised.
type twinPair struct {
	row     Row
	cell    MatrixCell
	s, twin report.Condition
}

// twinPairs are the cells of the rows keep picks that the series ran
// beside their twins' (both summarised in byID).
func twinPairs(byID map[string]report.Condition, keep func(Row) bool) []twinPair {
	cells := MatrixCells()
	ids := cellIDs(cells)
	var out []twinPair
	for _, c := range cells {
		r := matrixRows[c.Row]
		if r.Twin == "" || !keep(r) {
			continue
		}
		s, ok := byID[c.Condition.ID]
		t, twinOK := byID[ids[[3]string{c.Column, r.Twin, c.Path}]]
		if ok && twinOK {
			out = append(out, twinPair{r, c, s, t})
		}
	}
	return out
}

// frameworkCosts are the framework cells the series ran beside their
// twins (twinPairs), with each valid run's /fast p50 and p95 from runs:
// what the framework costs on /fast.
func frameworkCosts(byID map[string]report.Condition, runs []report.Run) []report.FrameworkCost {
	var out []report.FrameworkCost
	for _, p := range twinPairs(byID, func(r Row) bool { return r.Framework != "" }) {
		r, c, s, t := p.row, p.cell, p.s, p.twin
		fc := report.FrameworkCost{Framework: r.Framework, Row: r.ID, Twin: r.Twin, Column: c.Column, Path: c.Path,
			Condition: s.ID, TwinCondition: t.ID, Class: verdict.Class(s), TwinClass: verdict.Class(t),
			P50Ms: s.P50Ms, TwinP50Ms: t.P50Ms, P95Ms: s.P95Ms, TwinP95Ms: t.P95Ms,
			CostP50Ms: s.P50Ms - t.P50Ms, CostP95Ms: s.P95Ms - t.P95Ms}
		fc.P50MsRuns, fc.P95MsRuns = validFast(runs, s.ID)
		fc.TwinP50MsRuns, fc.TwinP95MsRuns = validFast(runs, t.ID)
		out = append(out, fc)
	}
	return out
}

// versionCells are the version cells the series ran beside their twins
// (twinPairs), with each valid run's /fast p95 from runs.
func versionCells(byID map[string]report.Condition, runs []report.Run) []report.VersionCell {
	var out []report.VersionCell
	for _, p := range twinPairs(byID, func(r Row) bool { return r.Gunicorn != "" }) {
		r, c, s, t := p.row, p.cell, p.s, p.twin
		vc := report.VersionCell{Release: r.Gunicorn, Row: r.ID, Twin: r.Twin, Column: c.Column, Path: c.Path,
			Condition: s.ID, TwinCondition: t.ID, Class: verdict.Class(s), TwinClass: verdict.Class(t), P95Ms: s.P95Ms, TwinP95Ms: t.P95Ms}
		_, vc.P95MsRuns = validFast(runs, s.ID)
		_, vc.TwinP95MsRuns = validFast(runs, t.ID)
		out = append(out, vc)
	}
	return out
}

// validFast are the /fast p50 and p95 of condition id's valid runs, in
// run order.
func validFast(runs []report.Run, id string) (p50, p95 []float64) {
	p50, p95 = []float64{}, []float64{}
	for _, r := range runs {
		if r.Condition == id && r.Valid {
			p50, p95 = append(p50, r.P50Ms), append(p95, r.P95Ms)
		}
	}
	return p50, p95
}
