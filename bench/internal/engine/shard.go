package engine

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// MaxShards bounds LAB_SHARD's count: more machines than a series has
// conditions would leave some with nothing to run.
const MaxShards = 64

// Shard is LAB_SHARD=i/N: the part of a series' condition table one
// process runs. Condition number k of the table (Plan.Table's order) runs
// on shard k mod N; article B's cells, whose verdicts compare servers
// round by round on one machine, and everything outside the table run on
// shard 0 only. The zero Shard, like 0/1, is the whole series.
type Shard struct {
	Index int `json:"index"`
	Count int `json:"count"`
}

// ParseShard reads "i/N", 0 <= i < N <= MaxShards.
func ParseShard(v string) (Shard, error) {
	a, b, ok := strings.Cut(v, "/")
	i, errI := strconv.Atoi(a)
	n, errN := strconv.Atoi(b)
	if !ok || errI != nil || errN != nil || n < 1 || n > MaxShards || i < 0 || i >= n {
		return Shard{}, fmt.Errorf("not i/N with 0 <= i < N <= %d", MaxShards)
	}
	return Shard{Index: i, Count: n}, nil
}

// Sharded is whether the series is split: its verdicts are then judged
// only on the merged shards (labreport -merge), never on one shard.
func (s Shard) Sharded() bool { return s.Count > 1 }

// Owns is whether condition number k of the table runs on this shard.
func (s Shard) Owns(k int) bool { return !s.Sharded() || k%s.Count == s.Index }

// Whole is whether this shard runs what lies outside the condition table
// and writes to the series' report: article B and the stack checks
// (TestArticleB and TestStack skip elsewhere). The harness's own tests
// run on every shard.
func (s Shard) Whole() bool { return s.Index == 0 }

func (s Shard) String() string {
	if !s.Sharded() {
		return "0/1"
	}
	return fmt.Sprintf("%d/%d", s.Index, s.Count)
}

// Table is the plan's condition table: article A's conditions, the sweep's,
// the matrix's, the streaming table's, the exhaustion table's and the
// pacer cross-check's, in that order, once each. A
// condition's place in it is its shard key.
func (p Plan) Table() []Condition {
	var out []Condition
	for _, c := range slices.Concat(p.Conditions, p.Sweep, p.Matrix, p.Streams, p.Exhaustion, p.Pacers) {
		if !slices.ContainsFunc(out, func(d Condition) bool { return d.ID == c.ID }) {
			out = append(out, c)
		}
	}
	return out
}

// Shard is the part of p that shard s runs: each list keeps the
// conditions whose place in p.Table() s owns.
func (p Plan) Shard(s Shard) Plan {
	if !s.Sharded() {
		return p
	}
	place := map[string]int{}
	for k, c := range p.Table() {
		place[c.ID] = k
	}
	keep := func(cs []Condition) []Condition {
		return slices.DeleteFunc(slices.Clone(cs), func(c Condition) bool { return !s.Owns(place[c.ID]) })
	}
	p.Conditions, p.Sweep, p.Matrix, p.Streams, p.Exhaustion, p.Pacers = keep(p.Conditions), keep(p.Sweep), keep(p.Matrix), keep(p.Streams), keep(p.Exhaustion), keep(p.Pacers)
	p.Settle = false
	return p
}
