package readme

import (
	"slices"

	"wsgilab/bench/internal/report"
)

// AddRows is m with the rows of from that m lacks and that have a cell
// under m's columns on m's paths, with those cells, and with the cells of
// m's rows under the columns of m that did not serve them and from's
// same column does: how the fixture series (fixtures/report) takes rows
// and columns measured after it, so that the protection table and the
// picture show them. Each column of m serves the rows it served (all of
// m's rows when it named none) and those from's same column serves anew,
// on the paths from's column runs them (its Only); rows keep from's order
// (the engine's, grouped by family), m's rows taking their family from
// from, and a row whose columns grew its Only and, where m had none, its
// capacity from from; the new framework and version rows bring their
// figures against their twins, as from measured both. m is left as it
// was.
func AddRows(m, from *report.Matrix) *report.Matrix {
	out := *m
	out.Rows = slices.Clone(m.Rows)
	out.Cells = slices.Clone(m.Cells)
	out.Columns = slices.Clone(m.Columns)
	had := map[string]bool{}
	for _, r := range m.Rows {
		had[r.ID] = true
	}
	// measured: the rows with a cell under one of m's columns, on its
	// paths.
	measured := map[string]bool{}
	for _, c := range from.Cells {
		if slices.ContainsFunc(m.Columns, func(col report.MatrixColumn) bool { return col.ID == c.Column && slices.Contains(col.Paths, c.Path) }) {
			measured[c.Row] = true
		}
	}
	fromRow := map[string]report.MatrixRow{}
	var added []string
	for _, r := range from.Rows {
		fromRow[r.ID] = r
		if !had[r.ID] && !r.Stack && measured[r.ID] {
			added = append(added, r.ID)
			out.Rows = append(out.Rows, r)
		}
	}
	// served: whether m's column col serves row id.
	served := func(col report.MatrixColumn, id string) bool {
		if !had[id] {
			return false
		}
		if len(col.Rows) > 0 {
			return slices.Contains(col.Rows, id)
		}
		i := slices.IndexFunc(m.Rows, func(r report.MatrixRow) bool { return r.ID == id })
		return m.Rows[i].Only == nil || slices.Contains(m.Rows[i].Only, col.ID)
	}
	// anew: whether out's column i takes row id from from's column j:
	// a row added, or one m's column did not serve, with a cell there.
	anew := func(i, j int, id string) bool {
		if served(m.Columns[i], id) || !slices.Contains(from.Columns[j].Rows, id) {
			return false
		}
		return slices.ContainsFunc(from.Cells, func(c report.MatrixCell) bool {
			return c.Column == m.Columns[i].ID && c.Row == id && slices.Contains(m.Columns[i].Paths, c.Path)
		})
	}
	for i, r := range out.Rows {
		f, ok := fromRow[r.ID]
		if !ok {
			continue
		}
		if r.Family == "" {
			out.Rows[i].Family = f.Family
		}
		if had[r.ID] && r.Only != nil && (f.Only == nil || len(f.Only) > len(r.Only)) {
			out.Rows[i].Only = slices.Clone(f.Only)
		}
		if had[r.ID] && len(r.Capacity) == 0 && len(f.Capacity) > 0 {
			out.Rows[i].Capacity = slices.Clone(f.Capacity)
		}
	}
	// from's order: its rows first, in its order, then m's others.
	order := func(r report.MatrixRow) int {
		if i := slices.IndexFunc(from.Rows, func(f report.MatrixRow) bool { return f.ID == r.ID }); i >= 0 {
			return i
		}
		return len(from.Rows)
	}
	slices.SortStableFunc(out.Rows, func(a, b report.MatrixRow) int { return order(a) - order(b) })
	// takenBy are, per column, the rows whose cells there came from from.
	takenBy := map[string][]string{}
	for i, col := range out.Columns {
		j := slices.IndexFunc(from.Columns, func(c report.MatrixColumn) bool { return c.ID == col.ID })
		if j < 0 {
			continue
		}
		rows := col.Rows
		if len(rows) == 0 {
			for _, r := range m.Rows {
				rows = append(rows, r.ID)
			}
		}
		rows = slices.Clone(rows)
		var taken []string
		for _, r := range from.Rows {
			if anew(i, j, r.ID) {
				taken = append(taken, r.ID)
				if !slices.Contains(rows, r.ID) {
					rows = append(rows, r.ID)
				}
			}
		}
		takenBy[col.ID] = taken
		slices.SortStableFunc(rows, func(a, b string) int {
			at := func(id string) int {
				return slices.IndexFunc(out.Rows, func(r report.MatrixRow) bool { return r.ID == id })
			}
			return at(a) - at(b)
		})
		out.Columns[i].Rows = rows
		// Each path either column limits (Only): the old rows m ran on
		// it, and the new rows from ran on it.
		limited := map[string]bool{}
		for p := range col.Only {
			limited[p] = true
		}
		for p := range from.Columns[j].Only {
			limited[p] = true
		}
		var only map[string][]string
		for _, p := range col.Paths {
			if !limited[p] {
				continue
			}
			var run []string
			for _, id := range rows {
				if !slices.Contains(taken, id) && m.Columns[i].Runs(id, p) || slices.Contains(taken, id) && from.Columns[j].Runs(id, p) {
					run = append(run, id)
				}
			}
			if len(run) < len(rows) {
				if only == nil {
					only = map[string][]string{}
				}
				only[p] = run
			}
		}
		out.Columns[i].Only = only
		for _, c := range from.Cells {
			if c.Column == col.ID && slices.Contains(taken, c.Row) && slices.Contains(col.Paths, c.Path) {
				out.Cells = append(out.Cells, c)
			}
		}
	}
	// The framework and version figures of the cells taken: from's
	// comparison of each with its twin, as from measured both.
	out.Frameworks = slices.Clone(m.Frameworks)
	for _, f := range from.Frameworks {
		if slices.Contains(takenBy[f.Column], f.Row) {
			out.Frameworks = append(out.Frameworks, f)
		}
	}
	out.Versions = slices.Clone(m.Versions)
	for _, v := range from.Versions {
		if slices.Contains(takenBy[v.Column], v.Row) {
			out.Versions = append(out.Versions, v)
		}
	}
	return &out
}
