package engine

import (
	"fmt"
	"slices"
	"strings"
	"wsgilab/bench/internal/buffermodel"
	"wsgilab/bench/internal/podspec"

	"wsgilab/bench/internal/report"
	"wsgilab/bench/internal/stats"
	"wsgilab/bench/internal/verdict"
)

// BuildMatrix is the resilience matrix of a series: every matrix cell and
// capacity step among conds (the series' summaries), with the slow
// clients' outcomes from downloads and the wait sites from runs, and a row
// per stack check the series ran, its steps as its capacity. It is nil
// when the series ran no matrix cell, capacity step nor stack check.
func BuildMatrix(conds []report.Condition, runs []report.Run, downloads []report.Download, stacks ...StackCheck) *report.Matrix {
	byID := map[string]report.Condition{}
	for _, c := range conds {
		byID[c.ID] = c
	}
	m := report.Matrix{ProtectedMs: verdict.ProtectedMs, StalledMs: verdict.StalledMs,
		Columns: []report.MatrixColumn{}, Rows: []report.MatrixRow{}, Cells: []report.MatrixCell{}}
	for _, mc := range MatrixCells() {
		s, ok := byID[mc.Condition.ID]
		if !ok {
			continue
		}
		m.Cells = append(m.Cells, matrixCell(mc, s, runs, downloads))
	}
	for _, col := range MatrixColumns {
		mc := report.MatrixColumn{ID: col.ID, Text: col.Text, Clients: col.Clients, Paths: []string{}, Rows: []string{}, Only: col.Only}
		for _, p := range col.paths() {
			mc.Paths = append(mc.Paths, p.ID)
		}
		for _, r := range MatrixRows {
			if _, ok := col.server(r); ok {
				mc.Rows = append(mc.Rows, r.ID)
			}
		}
		mc.Only = columnOnly(col, mc.Rows)
		m.Columns = append(m.Columns, mc)
	}
	m.Streams = []report.StreamCell{}
	for _, c := range StreamTable {
		if s, ok := byID[c.ID]; ok {
			m.Streams = append(m.Streams, report.StreamCell{Condition: c.ID, Path: c.Path.ID, XAccelNo: c.Stream.XAccelNo,
				RunsSound: s.RunsSound, RunsTotal: s.RunsTotal, Stream: s.Stream})
		}
	}
	stepped := false
	for _, r := range groupByFamily(slices.Clone(MatrixRows)) {
		row := report.MatrixRow{ID: r.ID, Family: r.Family(), Only: r.Only, Paths: r.Paths, Framework: r.Framework, Gunicorn: r.Gunicorn, Twin: r.Twin,
			Cmd: strings.Join(slices.Concat(r.Server.Env, r.Server.Cmd), " "), Concurrency: r.Concurrency,
			Basis: r.Basis, Capacity: []report.Capacity{}}
		for _, col := range MatrixColumns {
			if IsFaultColumn(col.ID) { // no steps: a fault's cells, and an idle twin's clients, are fixed
				continue
			}
			if c := capacity(col, Capacity(col, []Row{r}, false), byID); c != nil {
				row.Capacity = append(row.Capacity, *c)
			}
		}
		m.Rows = append(m.Rows, row)
		stepped = stepped || len(row.Capacity) > 0
	}
	for _, col := range ScaleColumns {
		for _, sr := range ScaleRows {
			c := capacity(col.Column, Scale(col, sr), byID)
			if c == nil {
				continue
			}
			c.Path = sr.Path.ID
			c.Memory = memoryFit(Scale(col, sr), byID)
			for i := range m.Rows {
				if m.Rows[i].ID == sr.Row.ID && !m.Rows[i].Stack {
					m.Rows[i].Capacity = append(m.Rows[i].Capacity, *c)
					stepped = true
				}
			}
		}
	}
	for _, sc := range stacks {
		r := sc.Row
		row := report.MatrixRow{ID: r.ID, Cmd: strings.Join(r.Server.Cmd, " "), Concurrency: r.Concurrency,
			Basis: r.Basis, Capacity: []report.Capacity{}, Stack: true}
		for _, b := range sc.Behaviours {
			if c := capacity(b.Column, sc.steps(b), byID); c != nil {
				c.Path = sc.PathOf(b).ID
				row.Capacity = append(row.Capacity, *c)
			}
		}
		if len(row.Capacity) > 0 {
			m.Rows = append(m.Rows, row)
			stepped = true
		}
	}
	for _, l := range LimitCells {
		if s, ok := byID[l.Condition.ID]; ok {
			m.Limits = append(m.Limits, report.LimitCell{Condition: s.ID, Moved: l.Moved, Against: l.Against, Class: verdict.Class(s),
				P95Ms: s.P95Ms, RunsSound: s.RunsSound, RunsTotal: s.RunsTotal, RequestsFailed: s.RequestsTotal - s.RequestsOK,
				RequestsTotal: s.RequestsTotal, SlowOutcomes: s.SlowOutcomes, ConnectMsMax: s.ConnectMsMax})
		}
	}
	m.Frameworks = frameworkCosts(byID, runs)
	m.Versions = versionCells(byID, runs)
	if len(m.Cells) == 0 && !stepped && len(m.Streams) == 0 && len(m.Limits) == 0 {
		return nil
	}
	return &m
}

func matrixCell(mc MatrixCell, s report.Condition, runs []report.Run, downloads []report.Download) report.MatrixCell {
	c := report.MatrixCell{Row: mc.Row, Column: mc.Column, Path: mc.Path, Condition: s.ID, SlowKind: s.SlowKind, Class: verdict.Class(s),
		Fault: s.Fault, Cut: s.Cut,
		RunsTotal: s.RunsTotal, RunsSound: s.RunsSound, P95Ms: s.P95Ms, P95MsMin: s.P95MsMin, P95MsMax: s.P95MsMax,
		P95MsRuns: s.P95MsRuns, MaxMs: s.MaxMs, RequestsFailed: s.RequestsTotal - s.RequestsOK,
		RequestsTotal: s.RequestsTotal, SlowClients: map[string]int{}, WriteS: s.WriteS, WorkerTimeouts: s.WorkerTimeouts,
		SendShareMax: s.AppWorkerSendShareMax, Waits: []report.SiteShare{}, AcceptQueuePeak: s.AcceptQueuePeak,
		AppThrottledShare: s.ThrottledShare["app"], ProxyMemoryPeakMiB: s.ProxyMemoryPeakMiB, SpillPeakMiB: s.TempfilePeakMiB,
		AppMemoryGrowthMiB: s.AppMemoryGrowthMiB, P95MsH2: s.P95MsH2, P95MsH2Runs: s.P95MsH2Runs,
		WorkersHeld: s.AppWorkersHeld, Workers: s.AppWorkers,
		RequestsFailedH2: s.RequestsTotalH2 - s.RequestsOKH2, RequestsTotalH2: s.RequestsTotalH2}
	sound := map[int]bool{}
	for _, r := range runs {
		if r.Condition == s.ID && r.Sound {
			sound[r.Run] = true
		}
	}
	var times []float64
	for _, d := range downloads {
		if d.Condition == s.ID && sound[d.Run] {
			c.SlowClients[d.Outcome]++
			times = append(times, d.CompletionS)
		}
	}
	c.SlowClientS = stats.Median(times)
	_, c.SlowClientSMax = stats.Range(times)
	if s.AppWaitSites != nil {
		c.Waits = s.AppWaitSites
	}
	return c
}

// capacity is a row's capacity under col from those of steps the series
// ran, nil when it ran fewer than two.
func capacity(col Column, steps []CapacityStep, byID map[string]report.Condition) *report.Capacity {
	c := report.Capacity{Column: col.ID, Steps: []report.CapacityStep{}}
	for _, st := range steps {
		s, ok := byID[st.Condition.ID]
		if !ok {
			continue
		}
		c.Steps = append(c.Steps, report.CapacityStep{Clients: st.Clients, Condition: s.ID, Class: verdict.Class(s), P95Ms: s.P95Ms,
			ClientCPUs: s.ClientCPUs, LagMaxMs: s.LagMaxMs, ClientThrottledShare: s.ThrottledShare["client"],
			AppMemoryPeakMiB: s.AppMemoryPeakMiB, ProxyMemoryPeakMiB: s.ProxyMemoryPeakMiB, SpillPeakMiB: s.TempfilePeakMiB,
			AppCPUPercent: s.AppCPUPercent, ClientCPUPercent: s.ClientCPUPercent, OOMKilled: s.OOMKilled, SlowOutcomes: s.SlowOutcomes,
			AppFDsPeak: s.AppFDsPeak, ProxyFDsPeak: s.ProxyFDsPeak})
	}
	if len(c.Steps) < 2 {
		return nil
	}
	c.StepLimit = c.Steps[len(c.Steps)-1].Clients
	for _, st := range c.Steps {
		if st.Class == report.ClassStalled {
			n := st.Clients
			c.FirstStalled = &n
			break
		}
	}
	c.LastProtected = -1
	for _, st := range c.Steps {
		if st.Class == report.ClassNoData {
			// A step without data bounds nothing: the capacity is unknown
			// from here on.
			c.Text = fmt.Sprintf("unknown from %d (no valid run)", st.Clients)
			if c.LastProtected >= 0 {
				c.Text = fmt.Sprintf("protected up to %d; unknown from %d (no valid run)", c.LastProtected, st.Clients)
			}
			return &c
		}
		if st.Class != report.ClassProtected {
			n := st.Clients
			c.FirstUnprotected = &n
			switch {
			case c.LastProtected == n-1:
				c.Text = fmt.Sprintf("%s from %d", st.Class, n)
			case c.LastProtected < 0:
				c.Text = fmt.Sprintf("%s from the first step, %d", st.Class, n)
			default:
				c.Text = fmt.Sprintf("%s from between %d and %d", st.Class, c.LastProtected+1, n)
			}
			if c.FirstStalled != nil && *c.FirstStalled != n {
				c.Text += fmt.Sprintf("; stalled from %d", *c.FirstStalled)
			}
			return &c
		}
		c.LastProtected = st.Clients
	}
	c.Text = fmt.Sprintf("protected up to %d", c.StepLimit)
	return &c
}

// memoryFit fits buffermodel.Memory on a scale setup's steps that ran:
// the memory of the container that protects (the front door behind a
// proxy, else the app) against its limit.
func memoryFit(steps []CapacityStep, byID map[string]report.Condition) *report.MemoryFit {
	if len(steps) == 0 {
		return nil
	}
	pod := steps[0].Condition.Pod("memory-model")
	role, limit := podspec.RoleApp, pod.App.Memory
	if pod.Proxy != nil {
		role, limit = podspec.RoleProxy, pod.ProxyLimits.Memory
	}
	var ms []buffermodel.MemoryStep
	for _, st := range steps {
		s, ok := byID[st.Condition.ID]
		if !ok {
			continue
		}
		peak := s.AppMemoryPeakMiB
		if role == podspec.RoleProxy {
			peak = s.ProxyMemoryPeakMiB
		}
		m := buffermodel.MemoryStep{Clients: st.Clients, OOM: slices.Contains(s.OOMKilled, role)}
		if peak != nil {
			m.MiB = *peak
		}
		ms = append(ms, m)
	}
	if len(ms) == 0 {
		return nil
	}
	lim := float64(limit) / (1 << 20)
	f := buffermodel.Memory{LimitMiB: lim}.Fit(ms)
	return &report.MemoryFit{Role: role, LimitMiB: lim, BaseMiB: f.BaseMiB, PerClientKiB: f.PerClientKiB, Fitted: f.Fitted,
		Predicted: f.Predicted, LastUnder: f.LastUnder, FirstReached: f.FirstReached, Right: f.Right, Problem: f.Problem}
}

// groupByFamily orders rows by their family (Families), keeping the
// table's order within one.
func groupByFamily(rows []Row) []Row {
	rank := func(r Row) int {
		return slices.IndexFunc(Families, func(f struct{ Prefix, Name string }) bool { return f.Name == r.Family() })
	}
	slices.SortStableFunc(rows, func(a, b Row) int { return rank(a) - rank(b) })
	return rows
}

// columnOnly is col's Only as the report reads it
// (report.MatrixColumn.Runs): for each path some of rows (the rows col
// serves) do not run, by col's Only or their own paths (Row.Paths), the
// rows that do; nil when every row runs every path.
func columnOnly(col Column, rows []string) map[string][]string {
	var only map[string][]string
	for _, p := range col.paths() {
		var run []string
		for _, id := range rows {
			if r, ok := matrixRows[id]; ok && col.runs(r, p) {
				run = append(run, id)
			}
		}
		if len(run) < len(rows) {
			if only == nil {
				only = map[string][]string{}
			}
			only[p.ID] = run
		}
	}
	return only
}
