package engine

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"wsgilab/bench/internal/report"
)

// MergeOptions set labreport -merge.
type MergeOptions struct {
	// AllowMismatch merges shards whose machines differ (CPU model, online
	// CPUs, kernel, cgroup version, CFS periods, engine version, the
	// sysctls a host sets), and
	// records each difference in the merged environment.json. Shards of
	// different series (fingerprints) are refused all the same: their
	// conditions, images or settings differ, and no option makes them one
	// series.
	AllowMismatch bool
}

// ErrMerge is Merge's error for shards that do not make one series.
var ErrMerge = errors.New("engine: the shards do not merge")

// shardDir is one shard's report directory as Merge reads it.
type shardDir struct {
	dir    string
	env    report.Environment
	runs   []report.Run
	origin report.Origin
}

// Merge merges the report directories of a sharded series (LAB_SHARD=i/N,
// one directory per shard) into out: every shard's runs summarized anew
// as one series, each condition marked with the shard and machine that
// ran it, and every verdict table judged on the merged data only. A
// condition a shard started without a run is missing data, as in an
// unsharded series; one no shard started (a crash, a -run filter) is
// listed in Merged.Unrun. It refuses, before writing anything, shards of different
// series, a missing or repeated shard, a condition run by a shard that
// does not own it, and (unless o.AllowMismatch) shards whose machines
// differ; and an out that is not empty. It writes into a directory beside
// out and renames it to out once whole, so a failure leaves nothing.
func Merge(out string, dirs []string, o MergeOptions) (Merged, error) {
	var m Merged
	shards, err := readShards(dirs)
	if err != nil {
		return m, err
	}
	first := shards[0].env.Shard
	plan, ok := Plans[first.Profile]
	if !ok {
		return m, fmt.Errorf("%w: %s ran profile %q, which this lab does not know", ErrMerge, shards[0].dir, first.Profile)
	}
	mismatches := machineMismatches(shards)
	if len(mismatches) > 0 && !o.AllowMismatch {
		return m, fmt.Errorf("%w: their machines differ, so their figures do not compare:\n  %s\n"+
			"labreport -merge -allow-mismatch merges them anyway and records each difference",
			ErrMerge, strings.Join(mismatches, "\n  "))
	}
	tmp, err := stage(out, dirs)
	if err != nil {
		return m, err
	}
	defer os.RemoveAll(tmp) // a no-op once renamed

	env := shards[0].env // shard 0's: it ran article B and the stack checks
	env.Shard = report.Shard{Index: 0, Count: 1, Profile: first.Profile, Series: first.Series, Conditions: []string{}, Attempted: []string{}}
	env.Merged = &report.Merged{Mismatches: append([]string{}, mismatches...), Unrun: []string{}}
	env.Inspections, env.Safety.Aborts, env.Safety.TooBusy = nil, nil, nil // shard 0's pods' own
	for _, s := range shards {
		env.Merged.Shards = append(env.Merged.Shards, s.origin)
		env.Safety.Aborts = append(env.Safety.Aborts, s.env.Safety.Aborts...)
		env.Safety.TooBusy = append(env.Safety.TooBusy, s.env.Safety.TooBusy...)
	}
	r := NewReports(tmp, &env)
	r.ranOn = map[string]*report.Origin{}
	// The table's order, whichever shard ran each condition.
	table := plan.Table()
	for _, c := range table {
		env.Shard.Conditions = append(env.Shard.Conditions, c.ID)
		startedAny := false
		for _, s := range shards {
			if !slices.Contains(s.env.Shard.Conditions, c.ID) {
				continue
			}
			started, err := r.mergeCondition(c, s)
			if err != nil {
				return m, err
			}
			startedAny = startedAny || started
		}
		if startedAny {
			env.Shard.Attempted = append(env.Shard.Attempted, c.ID)
		} else {
			env.Merged.Unrun = append(env.Merged.Unrun, c.ID)
		}
	}
	for _, s := range shards {
		if err := r.mergeRest(s); err != nil {
			return m, err
		}
		for _, run := range s.runs {
			if !slices.ContainsFunc(table, func(c Condition) bool { return c.ID == run.Condition }) && !slices.Contains(m.LeftOut, run.Condition) {
				m.LeftOut = append(m.LeftOut, run.Condition)
			}
		}
	}
	if err := errors.Join(r.Flush(), r.writeSeries(shards)); err != nil {
		return m, err
	}
	for _, t := range VerdictTables() {
		cs, err := r.Evaluate(t.ID, t.Verdicts)
		if err != nil {
			return m, err
		}
		m.Claims = append(m.Claims, cs...)
	}
	if err := r.Close(); err != nil {
		return m, err
	}
	m.Conditions, m.Mismatches, m.Unrun = r.Conditions(), mismatches, env.Merged.Unrun
	return m, commit(tmp, out)
}

// Merged is what Merge made of a sharded series.
type Merged struct {
	// Conditions are the merged conditions.json.
	Conditions []report.Condition
	// Claims are every verdict table's claims on the merged data.
	Claims []report.Claim
	// Mismatches are the machines' differences that were allowed.
	Mismatches []string
	// Unrun are the table's conditions no shard started: their verdicts
	// are not run, and the series is partial.
	Unrun []string
	// LeftOut are conditions the shards ran outside the series' table
	// (a stack check's steps): their raw records are copied, their rows
	// are not merged.
	LeftOut []string
}

// mergeCondition adds the runs shard s holds of c, which s owns, marking
// c as s's: started is false when s never started c.
func (r *Reports) mergeCondition(c Condition, s shardDir) (started bool, err error) {
	started = slices.Contains(s.env.Shard.Attempted, c.ID)
	for _, run := range s.runs {
		if run.Condition != c.ID {
			continue
		}
		var rec Record
		if err := readStrict(s.dir, RawA(c, run.Run), &rec); err != nil {
			return started, err
		}
		started = true
		r.Begin(c.ID)
		r.AttemptA(c)
		r.ranOn[c.ID] = &s.origin
		if _, err := r.addRun(c, rec); err != nil {
			return started, err
		}
	}
	if started { // started without a run: its verdicts lack data
		r.Begin(c.ID)
		r.AttemptA(c)
		r.ranOn[c.ID] = &s.origin
	}
	return started, nil
}

// mergeRest adds what of s lies outside the condition table: article B's
// rows and the stack checks (shard 0 runs them), and every raw record not
// written yet, so that no shard's data is lost. Two shards' raw records
// of one name must be the same bytes.
func (r *Reports) mergeRest(s shardDir) error {
	var rows []report.Throughput
	if err := readStrict(s.dir, "throughput.json", &rows); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	for _, row := range rows {
		if err := r.AddThroughput(row, report.ProbeRows{}); err != nil {
			return err
		}
	}
	var stacks []report.Stack
	if err := readStrict(s.dir, "stacks.json", &stacks); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	for _, st := range stacks {
		if err := r.AddStack(st); err != nil {
			return err
		}
	}
	raws, err := filepath.Glob(filepath.Join(s.dir, "raw", "*.json"))
	if err != nil {
		return err
	}
	for _, p := range raws {
		if r.merged(filepath.Base(p)) {
			continue // a table run's record, written anew by addRun
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		dst := filepath.Join(r.dir, "raw", filepath.Base(p))
		if have, err := os.ReadFile(dst); err == nil {
			if !bytes.Equal(have, b) {
				return fmt.Errorf("%w: two shards hold a different raw/%s (%s among them)", ErrMerge, filepath.Base(p), s.dir)
			}
			continue
		}
		if err := report.WriteFile(filepath.Dir(dst), filepath.Base(dst), func(w io.Writer) error { _, err := w.Write(b); return err }); err != nil {
			return err
		}
	}
	return nil
}

// merged is whether raw/name is a table run's record the merge wrote
// itself (re-encoded, so its bytes may differ from the shard's).
func (r *Reports) merged(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.ContainsFunc(r.runs, func(run report.Run) bool { return filepath.Base(rawRun(run.Condition, run.Run)) == name })
}

// stage checks that out is new or empty and none of the shards', and
// makes the directory beside it that the merge is written into.
func stage(out string, dirs []string) (string, error) {
	if err := emptyDir(out, dirs); err != nil {
		return "", err
	}
	parent := filepath.Dir(filepath.Clean(out))
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", err
	}
	return os.MkdirTemp(parent, "."+filepath.Base(out)+".partial-")
}

// commit puts the whole directory tmp in place of out (new, or empty).
func commit(tmp, out string) error {
	if err := os.Remove(out); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.Chmod(tmp, 0o755); err != nil { // MkdirTemp makes 0700
		return err
	}
	return os.Rename(tmp, out)
}

// writeSeries rewrites series.json for shards run side by side: it
// started with the first shard, its wall time is the longest shard's, and
// its overhead is every shard's wall time over every run's window.
func (r *Reports) writeSeries(shards []shardDir) error {
	r.mu.Lock()
	ser := report.NewSeries(time.Now(), r.runs)
	r.mu.Unlock()
	ser.StartedAt, ser.WallS = time.Time{}, 0
	var machineS float64
	for _, s := range shards {
		var one report.Series
		if err := readStrict(s.dir, "series.json", &one); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue // a shard that ran no article A run
			}
			return err
		}
		if ser.StartedAt.IsZero() || one.StartedAt.Before(ser.StartedAt) {
			ser.StartedAt = one.StartedAt
		}
		ser.WallS, machineS = max(ser.WallS, one.WallS), machineS+one.WallS
	}
	ser.Overhead = 0
	if ser.WindowsS > 0 {
		ser.Overhead = machineS / ser.WindowsS
	}
	return report.WriteFile(r.dir, "series.json", report.JSON(ser))
}
