package bench

import (
	"fmt"
	"os"
	"sync"
	"testing"
	"time"
)

// progress prints one line per finished run: on stderr for whoever waits
// on a long series (LAB_QUIET=1 turns that off), and through t.Log, so
// go test -v shows it too.
type progress struct {
	mu      sync.Mutex
	started time.Time
	done    int
}

// progressA counts article A's runs, progressB article B's rows.
var progressA, progressB = &progress{}, &progress{}

// runDone reports run k of n of one condition, out of planned runs in the
// series (an upper bound when go test -run picks fewer).
func (p *progress) runDone(t testing.TB, condition string, k, n, planned int, summary string) {
	t.Helper()
	p.mu.Lock()
	if p.done == 0 && p.started.IsZero() {
		p.started = time.Now()
	}
	p.done++
	elapsed := time.Since(p.started)
	perRun := elapsed / time.Duration(p.done)
	left := max(planned-p.done, 0)
	p.mu.Unlock()
	line := fmt.Sprintf("%s run %d/%d: %s; elapsed %v, series ETA at most %v",
		condition, k, n, summary, elapsed.Round(time.Second), (perRun * time.Duration(left)).Round(time.Second))
	t.Log(line)
	if os.Getenv("LAB_QUIET") != "1" && !testing.Verbose() {
		fmt.Fprintln(os.Stderr, "wsgilab:", line)
	}
}

// start marks the series' start, so the first run's time counts.
func (p *progress) start() {
	p.mu.Lock()
	p.started, p.done = time.Now(), 0
	p.mu.Unlock()
}
