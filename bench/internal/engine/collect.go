package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"wsgilab/bench/internal/podspec"
	"wsgilab/bench/internal/report"
)

// Collect writes raw records that a Kubernetes Job's pods printed (labagent
// pod client, gathered with kubectl logs) as one shard's report directory
// in out, for labreport -merge: every record summarized as its run, in the
// profile's table order, the shard named series. It refuses, before
// writing anything, an unknown profile, a record of a condition outside
// the table or whose pod is not the table's (a Job rendered by another
// version of the lab), a run given twice, records from nodes whose
// machines differ (unless allowMismatch: the Job spreads its pods over a
// node pool, which must be uniform), and an out that is not empty. It
// writes beside out and renames the directory once whole.
func Collect(out, profile, series string, recs []Record, allowMismatch bool) error {
	plan, ok := Plans[profile]
	if !ok {
		return fmt.Errorf("engine: profile %q: want one of %s", profile, strings.Join(slices.Sorted(maps.Keys(Plans)), ", "))
	}
	if series == "" {
		return fmt.Errorf("engine: collect needs the series' name (the Jobs' -series)")
	}
	if len(recs) == 0 {
		return fmt.Errorf("engine: no record to collect")
	}
	table := plan.Table()
	seen := map[string]bool{}
	var errs []string
	for _, r := range recs {
		key := fmt.Sprintf("%s run %d", r.Condition, r.Run)
		i := slices.IndexFunc(table, func(c Condition) bool { return c.ID == r.Condition })
		switch {
		case i < 0:
			errs = append(errs, fmt.Sprintf("%s: not a condition of profile %s", key, profile))
		case seen[key]:
			errs = append(errs, key+": given twice")
		case !samePod(table[i].Pod(r.Pod.Image), r.Pod):
			errs = append(errs, key+": its pod is not the table's (a Job rendered by another version of the lab?)")
		}
		seen[key] = true
		if m, m0 := r.Client.Node, recs[0].Client.Node; !m.Same(m0) && !allowMismatch {
			errs = append(errs, fmt.Sprintf("%s ran on %s × %d, kernel %s; %s run %d on %s × %d, kernel %s: the node pool is not uniform (-allow-mismatch collects anyway)",
				key, m.CPUModel, m.OnlineCPUs, m.Kernel, recs[0].Condition, recs[0].Run, m0.CPUModel, m0.OnlineCPUs, m0.Kernel))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("engine: the records do not make a series:\n  %s", strings.Join(dedupe(errs), "\n  "))
	}
	tmp, err := stage(out, nil)
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	m := recs[0].Client.Node
	var nodes []string
	for _, r := range recs {
		if n := r.Client.Node.Name; n != "" && !slices.Contains(nodes, n) {
			nodes = append(nodes, n)
		}
	}
	name := series
	if len(nodes) > 0 {
		slices.Sort(nodes)
		name = strings.Join(nodes, ", ")
	}
	env := report.Environment{
		Shard:   report.Shard{Count: 1, Profile: profile, Series: "kubernetes:" + series, Conditions: []string{}, Attempted: []string{}},
		Machine: report.Machine{CPUModel: m.CPUModel, CPUs: m.OnlineCPUs},
		Docker:  report.Docker{Kernel: m.Kernel, OS: "kubernetes", Name: name},
	}
	for _, c := range table {
		env.Shard.Conditions = append(env.Shard.Conditions, c.ID)
	}
	r := NewReports(tmp, &env)
	var start, end time.Time
	for _, c := range table {
		for _, rec := range recs {
			if rec.Condition != c.ID {
				continue
			}
			r.Begin(c.ID)
			r.AttemptA(c)
			if _, err := r.addRun(c, rec); err != nil {
				return err
			}
			if start.IsZero() || rec.Started.Before(start) {
				start = rec.Started
			}
			if e := rec.Started.Add(time.Duration(rec.WallS * float64(time.Second))); e.After(end) {
				end = e
			}
		}
	}
	if err := r.Flush(); err != nil {
		return err
	}
	// The series ran from its first pod's start to its last pod's end.
	ser := report.NewSeries(time.Now(), r.runs)
	ser.StartedAt, ser.WallS = start.UTC(), end.Sub(start).Seconds()
	if ser.WindowsS > 0 {
		ser.Overhead = ser.WallS / ser.WindowsS
	}
	if err := errors.Join(report.WriteFile(tmp, "series.json", report.JSON(ser)), r.Close()); err != nil {
		return err
	}
	return commit(tmp, out)
}

// samePod is whether two pod configurations are the same as JSON.
func samePod(a, b podspec.Config) bool {
	x, errX := json.Marshal(a)
	y, errY := json.Marshal(b)
	return errX == nil && errY == nil && bytes.Equal(x, y)
}
