package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"wsgilab/bench/internal/report"
)

// readShards reads each directory's environment.json and runs.json and
// checks that together they are one series: the same fingerprint, each
// shard i of N once, and each condition run by the one shard that owns
// it. The shards come back in index order.
func readShards(dirs []string) ([]shardDir, error) {
	if len(dirs) == 0 {
		return nil, fmt.Errorf("%w: no shard directory given", ErrMerge)
	}
	var shards []shardDir
	for _, d := range dirs {
		s := shardDir{dir: d}
		if err := readStrict(d, "environment.json", &s.env); err != nil {
			return nil, fmt.Errorf("%w: %s is not a shard's report directory: %v", ErrMerge, d, err)
		}
		if s.env.Shard.Count < 1 || s.env.Shard.Series == "" {
			return nil, fmt.Errorf("%w: %s/environment.json has no shard record (a series from before LAB_SHARD)", ErrMerge, d)
		}
		if err := readStrict(d, "runs.json", &s.runs); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %v", ErrMerge, err)
		}
		shards = append(shards, s)
	}
	slices.SortStableFunc(shards, func(a, b shardDir) int { return a.env.Shard.Index - b.env.Shard.Index })

	n, series := shards[0].env.Shard.Count, shards[0].env.Shard.Series
	var errs []string
	for _, s := range shards {
		sh := s.env.Shard
		if sh.Series != series {
			errs = append(errs, fmt.Sprintf("%s is shard %d/%d of series %.12s (profile %s), %s of series %.12s (profile %s): "+
				"shards must run the same code, images and settings (LAB_RUNS, LAB_PROFILE, ...)",
				s.dir, sh.Index, sh.Count, sh.Series, sh.Profile, shards[0].dir, series, shards[0].env.Shard.Profile))
		}
		if sh.Index < 0 || sh.Index >= sh.Count {
			errs = append(errs, fmt.Sprintf("%s is shard %d/%d: an index out of its range", s.dir, sh.Index, sh.Count))
		}
		if sh.Count != n {
			errs = append(errs, fmt.Sprintf("%s is shard %d/%d, %s shard %d/%d", s.dir, sh.Index, sh.Count, shards[0].dir, shards[0].env.Shard.Index, n))
		}
	}
	if len(errs) == 0 {
		for i := range n {
			var have []string
			for _, s := range shards {
				if s.env.Shard.Index == i {
					have = append(have, s.dir)
				}
			}
			switch {
			case len(have) == 0:
				errs = append(errs, fmt.Sprintf("shard %d/%d is missing", i, n))
			case len(have) > 1:
				errs = append(errs, fmt.Sprintf("shard %d/%d is in %s", i, n, strings.Join(have, " and ")))
			}
		}
	}
	for _, s := range shards {
		for _, run := range s.runs {
			if inTable := slices.ContainsFunc(shards, func(o shardDir) bool { return slices.Contains(o.env.Shard.Conditions, run.Condition) }); inTable &&
				!slices.Contains(s.env.Shard.Conditions, run.Condition) {
				errs = append(errs, fmt.Sprintf("%s ran %s run %d, which another shard owns", s.dir, run.Condition, run.Run))
			}
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w:\n  %s", ErrMerge, strings.Join(dedupe(errs), "\n  "))
	}
	for i := range shards {
		shards[i].origin = origin(shards[i])
	}
	return shards, nil
}

// origin is where shard s ran: the engine and host from environment.json,
// the machine and cgroup as its pods read them from inside.
func origin(s shardDir) report.Origin {
	e := s.env
	o := report.Origin{Shard: fmt.Sprintf("%d/%d", e.Shard.Index, e.Shard.Count), Dir: s.dir, Engine: "docker " + e.Docker.ServerVersion,
		EngineHost: e.Docker.Name, CPUModel: e.Machine.CPUModel, CPUs: e.Machine.CPUs, Kernel: e.Docker.Kernel, CPUPeriodsMicros: []int64{}}
	if e.Docker.OS == "kubernetes" { // labkube collect's: no engine version was read
		o.Engine = "kubernetes"
	}
	for _, run := range s.runs {
		var rec Record
		if readStrict(s.dir, rawRun(run.Condition, run.Run), &rec) != nil {
			continue
		}
		if m := rec.Client.Node; m.CPUModel != "" {
			o.CPUModel, o.CPUs, o.Kernel = m.CPUModel, m.OnlineCPUs, m.Kernel
		}
		if o.Sysctls == nil && len(rec.Client.Sysctls) > 0 {
			o.Sysctls = maps.Clone(rec.Client.Sysctls)
			delete(o.Sysctls, "net.ipv4.tcp_rmem") // each condition pins these
			delete(o.Sysctls, "net.ipv4.tcp_wmem")
		}
		o.CgroupVersion = rec.Client.Limits.CgroupVersion
		periods := []int64{rec.Client.Limits.CPUPeriodMicros}
		if rec.Sampler != nil {
			for _, l := range rec.Sampler.Limits {
				periods = append(periods, l.CPUPeriodMicros)
			}
		}
		for _, p := range periods {
			if p > 0 && !slices.Contains(o.CPUPeriodsMicros, p) {
				o.CPUPeriodsMicros = append(o.CPUPeriodsMicros, p)
			}
		}
	}
	slices.Sort(o.CPUPeriodsMicros)
	return o
}

// machineMismatches lists how each shard's machine differs from shard
// 0's, and any shard whose own runs saw more than one CFS period.
func machineMismatches(shards []shardDir) []string {
	var out []string
	a := shards[0].origin
	for _, s := range shards {
		b := s.origin
		if len(b.CPUPeriodsMicros) > 1 {
			out = append(out, fmt.Sprintf("cpu_periods_us: shard %s (%s) ran with periods %v", b.Shard, b.Dir, b.CPUPeriodsMicros))
		}
		if s.dir == shards[0].dir {
			continue
		}
		for _, f := range []struct {
			name string
			x, y string
		}{
			{"cpu_model", a.CPUModel, b.CPUModel},
			{"online_cpus", strconv.Itoa(a.CPUs), strconv.Itoa(b.CPUs)},
			{"kernel", a.Kernel, b.Kernel},
			{"cgroup_version", strconv.Itoa(a.CgroupVersion), strconv.Itoa(b.CgroupVersion)},
			{"cpu_periods_us", fmt.Sprint(a.CPUPeriodsMicros), fmt.Sprint(b.CPUPeriodsMicros)},
			{"engine", a.Engine, b.Engine},
		} {
			if f.x != f.y && (f.name != "cpu_periods_us" || len(a.CPUPeriodsMicros) > 0 && len(b.CPUPeriodsMicros) > 0) {
				out = append(out, fmt.Sprintf("%s: shard %s (%s) %s, shard %s (%s) %s", f.name, a.Shard, a.Dir, f.x, b.Shard, b.Dir, f.y))
			}
		}
		if len(a.Sysctls) == 0 || len(b.Sysctls) == 0 {
			continue // a shard that ran nothing read nothing to compare
		}
		for _, k := range slices.Sorted(maps.Keys(union(a.Sysctls, b.Sysctls))) {
			if x, y := a.Sysctls[k], b.Sysctls[k]; x != y {
				out = append(out, fmt.Sprintf("%s: shard %s (%s) %q, shard %s (%s) %q", k, a.Shard, a.Dir, x, b.Shard, b.Dir, y))
			}
		}
	}
	return out
}

// union is the keys of a and b.
func union(a, b map[string]string) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

// emptyDir checks that out is a new or empty directory, and none of the
// shards': a merge never overwrites a report.
func emptyDir(out string, dirs []string) error {
	for _, d := range dirs {
		if filepath.Clean(d) == filepath.Clean(out) {
			return fmt.Errorf("%w: the merged report would overwrite shard %s; give another -dir", ErrMerge, d)
		}
	}
	ents, err := os.ReadDir(out)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(ents) > 0 {
		return fmt.Errorf("%w: %s already holds %d entries; merge into a new or empty directory", ErrMerge, out, len(ents))
	}
	return nil
}

// readStrict decodes dir/name into v, refusing fields v does not have: a
// file written by another version of the lab.
func readStrict(dir, name string, v any) error {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(dir, name), err)
	}
	return nil
}

func dedupe(ss []string) []string {
	slices.Sort(ss)
	return slices.Compact(ss)
}
