package bench

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"wsgilab/bench/internal/engine"
	"wsgilab/bench/internal/kube"
	"wsgilab/bench/internal/verdict"
)

// job is the whole go test of this package (make test, make repro): its
// plan is printed first, and every finished run reports the job's ETA.
var job = engine.NewJob(nil, nil)

// jobTests are this package's top-level tests in the order go test runs
// them, file by file in name order, then as declared (TestJobTestsInOrder
// holds the table to the files), each with its units and what one takes:
// a run's pod, window and collection, or a test timed whole. The times
// were measured on an AMD EPYC, 2 cores (make test of commit 61773e6,
// 2026-12-02: each test's time over its units; reports/measurements.md,
// "The job's estimates").
var jobTests = []struct {
	test string
	// table, for a test of runs, is its conditions in the plan and the
	// runs of each (its subtests are named by condition id); count, for
	// a test of other units, counts them; neither: one unit, the test
	// whole. A test whose each is 0 is never timed (a helper the others
	// run as a child, a unit test).
	table func(engine.Plan) ([]engine.Condition, func(engine.Condition) int)
	count func(f engine.RunFilter, kept map[string]bool) (units, done int, unit string)
	each  time.Duration
	// full, when set, is a unit's time under the full profile, where it
	// differs from each (article B at the article's -n).
	full time.Duration
}{
	{"TestArticleA", func(p engine.Plan) ([]engine.Condition, func(engine.Condition) int) {
		return p.Conditions, func(c engine.Condition) int { return c.Runs(lab.Settings.Runs) }
	}, nil, 10600 * time.Millisecond, 0},
	// Article B: 206 s for its 24 rows under ci; under full, the
	// article's -n 10000 in 5 pairs and -n 1000 with blocking (three
	// cells served at 10 req/s) come to about 17 minutes at ci's rates.
	{"TestArticleB", nil, rowsB, 8600 * time.Millisecond, 43 * time.Second},
	{"TestCrossCheckCatchesSlowGenerator", nil, nil, 27 * time.Second, 0},
	// The cell past the temp-file limit (48 MiB at 2 MiB/s: 25 s), the
	// full temp directory (10 s) and 256 slow mobile readers (24 s), with
	// their pods (2026-12-03, AMD EPYC).
	{"TestExhaustion", func(p engine.Plan) ([]engine.Condition, func(engine.Condition) int) {
		return p.Exhaustion, func(engine.Condition) int { return p.ExhaustionRuns }
	}, nil, 25 * time.Second, 0},
	{"TestSilentShortBodyCaught", nil, nil, 12 * time.Second, 0},
	// make test's reset cell once more, with a leaky app: one run.
	{"TestResetCatchesLeakyApp", nil, nil, 13 * time.Second, 0},
	{"TestFrontDoorPresetsPassOwnCheck", nil, nil, 2 * time.Second, 0},
	{"TestFrontDoorBrokenConfigRefused", nil, nil, 1 * time.Second, 0},
	{"TestHardening", nil, nil, 3 * time.Second, 0},
	{"TestOOMKillIsReported", nil, nil, 10 * time.Second, 0},
	{"TestImageWithoutHostSources", nil, nil, 35 * time.Second, 0},
	{"TestJobTestsInOrder", nil, nil, 0, 0},
	// make kube-e2e only (LAB_KUBE_BIN): article A's ci table as Jobs on
	// a single-node cluster, a pod after the other (2026-12-08, AMD EPYC).
	{"TestKubeCluster", nil, kubeRuns, 20 * time.Second, 0},
	{"TestKubePod", nil, nil, 16 * time.Second, 0},
	{"TestLeakHelper", nil, nil, 0, 0},
	// 12 more children, signalled at each step of a run's life
	// (2026-12-03, Intel Xeon: 112 - 115 s; 2026-12-04, AMD EPYC, the
	// children taking the series' images: 78 s).
	{"TestNoLeaks", nil, nil, 80 * time.Second, 0},
	{"TestMatrix", func(p engine.Plan) ([]engine.Condition, func(engine.Condition) int) {
		return p.Matrix, func(engine.Condition) int { return p.MatrixRuns }
	}, nil, 10700 * time.Millisecond, 0},
	{"TestSingleProcessServer", nil, nil, 11 * time.Second, 0},
	// Article A's cells paced by Toxiproxy: a run as article A's; the
	// mis-paced twin, one run at twice the rate (about 4 s shorter).
	{"TestPacers", func(p engine.Plan) ([]engine.Condition, func(engine.Condition) int) {
		return p.Pacers, func(c engine.Condition) int { return c.Runs(lab.Settings.Runs) }
	}, nil, 10600 * time.Millisecond, 0},
	{"TestPacersCatchMisPacedReader", nil, nil, 8 * time.Second, 0},
	// 4 quiet runs, 4 burned ones and their 2 redos (2026-12-03, Intel
	// Xeon: 112 s).
	{"TestRedo", nil, nil, 112 * time.Second, 0},
	// Two runs and three children; a 3 s window twice and its redo; four
	// runs on two shards (2026-12-04, AMD EPYC: 33, 23 and 61 s).
	{"TestResume", nil, nil, 33 * time.Second, 0},
	{"TestSafetyStop", nil, nil, 23 * time.Second, 0},
	{"TestShards", nil, nil, 62 * time.Second, 0},
	{"TestSmokeVersions", nil, nil, 0, 0},
	{"TestSmokeFast", nil, nil, 4 * time.Second, 0},
	{"TestSmokeLarge", nil, nil, 1 * time.Second, 0},
	{"TestSmokeLimits", nil, nil, 1 * time.Second, 0},
	// make test's 4 checks took 231 s (2026-12-06, Intel Xeon), and
	// FastAPI's slow WebSocket consumers add 43 s to its 49.
	{"TestStack", nil, stackChecks, 68 * time.Second, 0},
	{"TestStackWSPath", nil, nil, 5 * time.Second, 0},
	{"TestStackProxyConfig", nil, nil, 3 * time.Second, 0},
	// The leaky stack's reset step alone, one run, its app image built
	// first (2026-12-07, AMD EPYC: 11 s).
	{"TestStackResetCatchesLeak", nil, nil, 12 * time.Second, 0},
	{"TestStream", func(p engine.Plan) ([]engine.Condition, func(engine.Condition) int) {
		return p.Streams, func(engine.Condition) int { return p.StreamRuns }
	}, nil, 6300 * time.Millisecond, 0},
	{"TestSweep", func(p engine.Plan) ([]engine.Condition, func(engine.Condition) int) {
		return p.Sweep, func(engine.Condition) int { return p.SweepRuns }
	}, nil, 10900 * time.Millisecond, 0},
}

// rowsB counts article B's rows the filter runs, one per cell and
// generator, and those of the cells the journal holds.
func rowsB(f engine.RunFilter, kept map[string]bool) (units, done int, unit string) {
	if !lab.Settings.Shard.Whole() {
		return 0, 0, "rows"
	}
	for _, srv := range engine.ServersB {
		for _, block := range engine.BlockingMs {
			cell := verdict.Cell(srv.ID, block)
			if f.Runs("TestArticleB", cell) {
				units += len(engine.GeneratorsB)
				if kept[engine.UnitB(cell)] {
					done += len(engine.GeneratorsB)
				}
			}
		}
	}
	return units, done, "rows"
}

// kubeRuns counts the pods TestKubeCluster runs: article A's table as
// labkube renders it (every run of every condition), none without a
// cluster (LAB_KUBE_BIN unset: skipped).
func kubeRuns(engine.RunFilter, map[string]bool) (units, done int, unit string) {
	if lab.Settings.KubeBin == "" {
		return 0, 0, "pods"
	}
	conds, runs := kube.Tables["a"](engine.Plans["ci"])
	for _, c := range conds {
		units += runs(c)
	}
	return units, 0, "pods"
}

// stackChecks counts the stack checks TestStack makes: LAB_STACK's, or
// the examples the profile and the filter run.
func stackChecks(f engine.RunFilter, _ map[string]bool) (units, done int, unit string) {
	switch {
	case !lab.Settings.Shard.Whole():
		return 0, 0, "checks"
	case lab.Settings.Stack != nil:
		return 1, 0, "checks"
	}
	for _, ex := range exampleStacks {
		if (!ex.full || lab.Settings.Profile == "full") && f.Runs("TestStack", ex.id) {
			units++
		}
	}
	return units, 0, "checks"
}

// newJob is the job that this process's settings and -run filter make;
// the units a resumed series' journal holds (kept) cost nothing.
func newJob(filter engine.RunFilter, kept []string) *engine.Job {
	isKept := map[string]bool{}
	for _, k := range kept {
		isKept[k] = true
	}
	plan := lab.Settings.Plan()
	var parts []engine.JobPart
	for _, jt := range jobTests {
		if !filter.Runs(jt.test) || jt.each == 0 {
			continue
		}
		p := engine.JobPart{Test: jt.test, Units: 1, Unit: engine.UnitTest, Each: jt.each}
		if jt.full > 0 && lab.Settings.Profile == "full" {
			p.Each = jt.full
		}
		switch {
		case jt.table != nil:
			p.Units, p.Unit = 0, "runs"
			conds, runs := jt.table(plan)
			for _, c := range conds {
				for k := 1; filter.Runs(jt.test, c.ID) && k <= runs(c); k++ {
					p.Units++
					if isKept[engine.UnitA(c, k)] {
						p.Kept++
					}
				}
			}
		case jt.count != nil:
			p.Units, p.Kept, p.Unit = jt.count(filter, isKept)
		}
		if p.Units > 0 {
			parts = append(parts, p)
		}
	}
	return engine.NewJob(parts, kept)
}

// TestJobTestsInOrder holds jobTests to this package's files: every
// top-level test, in the order go test runs them.
func TestJobTestsInOrder(t *testing.T) {
	files, err := filepath.Glob("*_test.go")
	require.NoError(t, err)
	slices.Sort(files)
	var want []string
	for _, name := range files {
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Test") && fn.Name.Name != "TestMain" {
				want = append(want, fn.Name.Name)
			}
		}
	}
	var got []string
	for _, jt := range jobTests {
		got = append(got, jt.test)
	}
	assert.Equal(t, want, got, "jobTests must list every top-level test in the order go test runs them")
}
