package probe

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// MaxQuietWait bounds SamplerSpec.QuietFor's wait from the first sample:
// a load waits for the sampler at most load.DefaultAfterWait (10 s),
// counted from its own exec, which the sampler's may trail.
const MaxQuietWait = 6 * time.Second

// quietWatch follows the app's and the proxy's held descriptors
// (FDSample.Held) until they have stayed the same for span
// (SamplerSpec.QuietFor): the count a leak check compares the end of a
// run with. Counted at their most before the load, a worker still
// importing its modules held a file for a tick and hid one leak of two
// (TestResetCatchesLeakyApp, CI of 2026-12-07); at their fewest, a
// second worker not yet done starting showed one that was not.
type quietWatch struct {
	span   time.Duration
	roles  []string
	since  int64
	counts map[string]int
}

func newQuietWatch(spec SamplerSpec) *quietWatch {
	q := &quietWatch{span: spec.QuietFor, roles: []string{"app"}}
	if spec.ProxyPort != 0 {
		q.roles = append(q.roles, "proxy")
	}
	return q
}

// observe takes one tick's descriptor samples, taken at now; it returns
// the counts once they have held for the span, nil until then. A tick
// that lacks a role, or did not sort its descriptors, starts over.
func (q *quietWatch) observe(tick []FDSample, now int64) map[string]int {
	counts := map[string]int{}
	for _, f := range tick {
		if slices.Contains(q.roles, f.Role) && f.Classified() {
			counts[f.Role] = f.Held()
		}
	}
	if len(counts) != len(q.roles) || !maps.Equal(counts, q.counts) {
		q.since, q.counts = now, counts
		return nil
	}
	if time.Duration(now-q.since) < q.span {
		return nil
	}
	return q.counts
}

// String says where the counts last stood, for the error of a wait that
// ran out.
func (q *quietWatch) String() string {
	var b strings.Builder
	for _, role := range q.roles {
		n, ok := q.counts[role]
		if !ok {
			fmt.Fprintf(&b, " %s unsorted", role)
			continue
		}
		fmt.Fprintf(&b, " %s %d", role, n)
	}
	return strings.TrimSpace(b.String())
}
