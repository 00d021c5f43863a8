package engine

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"wsgilab/bench/internal/report"
)

// Collect writes raw records that a Kubernetes Job's pods printed (labagent
// pod client, gathered with kubectl logs) as one shard's report directory
// in out, for labreport -merge: every record summarized as its run, in the
// profile's table order, the shard named series. It refuses, before
// writing anything, an unknown profile, a record of a condition outside
// the table, a run given twice and an out that is not empty. The machine
// is the one the first record's client read from inside its pod.
func Collect(out, profile, series string, recs []Record) error {
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
		switch {
		case !slices.ContainsFunc(table, func(c Condition) bool { return c.ID == r.Condition }):
			errs = append(errs, fmt.Sprintf("%s: not a condition of profile %s", key, profile))
		case seen[key]:
			errs = append(errs, key+": given twice")
		}
		seen[key] = true
	}
	if len(errs) > 0 {
		return fmt.Errorf("engine: the records do not make a series:\n  %s", strings.Join(errs, "\n  "))
	}
	if err := emptyDir(out, nil); err != nil {
		return err
	}
	m := recs[0].Client.Machine
	env := report.Environment{
		Shard:   report.Shard{Count: 1, Profile: profile, Series: "kubernetes:" + series, Conditions: []string{}},
		Machine: report.Machine{CPUModel: m.CPUModel, CPUs: m.OnlineCPUs},
		Docker:  report.Docker{Kernel: m.Kernel, OS: "kubernetes", Name: series},
	}
	for _, c := range table {
		env.Shard.Conditions = append(env.Shard.Conditions, c.ID)
	}
	r := NewReports(out, &env)
	for _, c := range table {
		for _, rec := range recs {
			if rec.Condition != c.ID {
				continue
			}
			r.begin(c.ID)
			r.attemptA(c)
			if _, err := r.addRun(c, rec); err != nil {
				return err
			}
		}
	}
	if err := r.writeA(); err != nil {
		return err
	}
	if err := r.WriteSampled(); err != nil {
		return err
	}
	return r.Close()
}
