package engine

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"wsgilab/bench/internal/apt"
	"wsgilab/bench/internal/disturb"
	"wsgilab/bench/internal/report"
	"wsgilab/bench/internal/safety"
	"wsgilab/bench/internal/stackfile"
)

// Defaults of Settings.
const (
	// DefaultRuns is how many times each condition runs, as in article A.
	DefaultRuns = 3
	// MaxRuns bounds LAB_RUNS.
	MaxRuns = 100
	// DefaultProfile is article B's load unless LAB_PROFILE says otherwise.
	DefaultProfile = "ci"
)

// Settings are the LAB_* environment variables, each checked once before
// anything starts.
type Settings struct {
	// Runs is LAB_RUNS: runs per condition, 1 to MaxRuns.
	Runs int
	// Profile is LAB_PROFILE: article B's load, a key of ProfilesB, and
	// what runs of article A and the sweep, a key of Plans.
	Profile string
	// SweepRuns is LAB_SWEEP_RUNS: runs per sweep cell, 1 to MaxRuns; 0
	// takes the profile's (Plan.SweepRuns).
	SweepRuns int
	// MatrixRuns is LAB_MATRIX_RUNS: runs per resilience-matrix cell,
	// capacity step, streaming and exhaustion condition, 1 to MaxRuns; 0
	// takes the profile's (Plan.MatrixRuns, Plan.StreamRuns,
	// Plan.ExhaustionRuns).
	MatrixRuns int
	// ReportDir is LAB_REPORT_DIR: where reports go; it must be writable.
	ReportDir string
	// Quiet is LAB_QUIET: no progress lines on stderr.
	Quiet bool
	// Safety is LAB_SAFETY_CPU and LAB_SAFETY_WINDOW: the host safety stop.
	Safety SafetySettings
	// Resume is LAB_RESUME: what the series does with ReportDir's
	// journal (JournalOff unless set; make repro sets JournalResume, and
	// make repro FRESH=1 JournalFresh).
	Resume JournalMode
	// Stack is LAB_STACK: a team's stack file for TestStack (make check),
	// loaded and validated here, before anything starts; nil when unset.
	Stack *stackfile.File
	// Shard is LAB_SHARD: the part of the series this process runs (the
	// whole series unless set); Plan gives only that part.
	Shard Shard
	// Apt is LAB_DEBIAN_MIRROR and LAB_DEBIAN_SECURITY: the Debian
	// archive the base image is built from (the host's apt sources unless
	// set).
	Apt apt.Archive
	// ImageRecord is LAB_IMAGE_RECORD: what make test's image step
	// (cmd/labimage) found or built for this series, read here; nil when
	// unset. The series reports the images that step built as built
	// (image.Adopt). A record that carries versions is a parent series'
	// own, for its children: they take its images and versions as they
	// are (bench's labImages).
	ImageRecord *report.ImageRecord
	// KubeBin is LAB_KUBE_BIN: the directory of the single-node cluster's
	// binaries (make kube-e2e builds them from bench/cluster), for
	// TestKubeCluster; empty skips it.
	KubeBin string
}

// SafetySettings switch the host safety stop on or off and set it. Redo
// is the rule by which a run the stop let through is still judged
// disturbed and run again (package disturb); it holds while the stop is
// on.
type SafetySettings struct {
	Enabled bool
	Config  safety.Config
	Redo    report.RedoRule
}

// knownSettings are every LAB_* variable the lab reads on the host, with
// what each accepts; LAB_BROWSER_DIR belongs to the report's browser test.
var knownSettings = map[string]string{
	"LAB_RUNS":        fmt.Sprintf("a whole number from 1 to %d (runs per condition; default %d)", MaxRuns, DefaultRuns),
	"LAB_PROFILE":     "ci (make test) or full (make repro); default " + DefaultProfile,
	"LAB_SWEEP_RUNS":  fmt.Sprintf("a whole number from 1 to %d (runs per sweep cell; default 2 under ci, 3 under full)", MaxRuns),
	"LAB_MATRIX_RUNS": fmt.Sprintf("a whole number from 1 to %d (runs per matrix cell, capacity step, streaming and exhaustion condition; default 1 under ci, 3 under full)", MaxRuns),
	"LAB_REPORT_DIR":  "a directory the lab can write to, or one it can create; default " + report.DefaultDir + " under the module root",
	"LAB_QUIET":       "1, true, yes (no progress lines) or 0, false, no",
	"LAB_BROWSER_DIR": "a report directory whose page the browser test renders and screenshots in place (make repro)",
	"LAB_NO_BROWSER":  "1 (skip the report's headless Chromium test) or 0",
	"LAB_SAFETY_CPU": fmt.Sprintf("off, or the share of the host's CPU outside the lab above which the safety stop trips: a number in (0, 1) or a percentage like 90%%; default %v",
		safety.DefaultThreshold),
	"LAB_SAFETY_WINDOW": fmt.Sprintf("how long that share must last to trip it, a Go duration from %v to 1m; default %v",
		2*safety.DefaultInterval, safety.DefaultWindow),
	"LAB_STACK": "a stack file (fixtures/stacks/*.yaml shows the form), absolute or relative to the module root: TestStack checks it (make check STACK=...)",
	"LAB_SHARD": fmt.Sprintf("i/N with 0 <= i < N <= %d: run only the conditions whose place in the series' table is i modulo N (and article B on shard 0), to merge with labreport -merge; default the whole series", MaxShards),
	"LAB_DEBIAN_MIRROR": "the http:// or https:// URL of a Debian archive to build the image's bookworm and bookworm-updates from, e.g. " + apt.DefaultMirror +
		" (a host that is not Debian, such as a stock CI runner); default the host's own apt sources",
	"LAB_DEBIAN_SECURITY": "the http:// or https:// URL of Debian's security archive, for bookworm-security, with LAB_DEBIAN_MIRROR; default " + apt.DefaultSecurity,
	"LAB_IMAGE_RECORD":    "the file cmd/labimage -record wrote (make test's image step, beside the compile): the images it found or built for this series and the base image's build output",
	"LAB_KUBE_BIN":        "the directory make kube-e2e built the single-node cluster's binaries into (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubelet, kubectl): TestKubeCluster runs article A's table on it; unset skips it",
	"LAB_RESUME":          "1 (journal each completed run in LAB_REPORT_DIR and resume an interrupted series of the same fingerprint; make repro), fresh (journal, starting afresh; make repro FRESH=1) or 0 (no journal; default)",
}

// ModuleRoot is the directory holding the lab's go.mod, at dir or above
// it.
func ModuleRoot(dir string) (string, error) {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod at or above %s: run from the lab's checkout", dir)
		}
	}
}

// SettingNames are every LAB_* variable the lab reads on the host, sorted.
func SettingNames() []string {
	return slices.Sorted(maps.Keys(knownSettings))
}

// ParseSettings reads the LAB_* variables from environ (os.Environ's
// form). root is the module root, for the default report directory. Every
// bad value is named with what is accepted; an unknown LAB_* name is an
// error too, since a misspelt setting would silently not apply. Nothing is
// written: the report directory is tried with a file that is removed.
func ParseSettings(environ []string, root string) (Settings, error) {
	env := map[string]string{}
	var errs []error
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(k, "LAB_") {
			continue
		}
		if _, ok := knownSettings[k]; !ok {
			errs = append(errs, fmt.Errorf("%s=%q: unknown setting; the lab reads %s", k, v, strings.Join(SettingNames(), ", ")))
			continue
		}
		env[k] = v
	}
	bad := func(k string) error { return fmt.Errorf("%s=%q: want %s", k, env[k], knownSettings[k]) }

	s := Settings{Runs: DefaultRuns, Profile: DefaultProfile, ReportDir: filepath.Join(root, report.DefaultDir),
		Safety: SafetySettings{Enabled: true, Config: safety.DefaultConfig(), Redo: disturb.DefaultRule()}, Resume: JournalOff}
	if v, ok := env["LAB_RUNS"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxRuns {
			errs = append(errs, bad("LAB_RUNS"))
		}
		s.Runs = n
	}
	for _, o := range []struct {
		name string
		dst  *int
	}{{"LAB_SWEEP_RUNS", &s.SweepRuns}, {"LAB_MATRIX_RUNS", &s.MatrixRuns}} {
		name, dst := o.name, o.dst
		if v, ok := env[name]; ok {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > MaxRuns {
				errs = append(errs, bad(name))
			}
			*dst = n
		}
	}
	if v, ok := env["LAB_PROFILE"]; ok {
		if _, known := ProfilesB[v]; !known {
			errs = append(errs, bad("LAB_PROFILE"))
		}
		s.Profile = v
	}
	if v, ok := env["LAB_QUIET"]; ok {
		switch strings.ToLower(v) {
		case "1", "true", "yes":
			s.Quiet = true
		case "0", "false", "no":
		default:
			errs = append(errs, bad("LAB_QUIET"))
		}
	}
	if v, ok := env["LAB_NO_BROWSER"]; ok && v != "0" && v != "1" {
		errs = append(errs, bad("LAB_NO_BROWSER"))
	}
	if v, ok := env["LAB_BROWSER_DIR"]; ok {
		if st, err := os.Stat(v); err != nil || !st.IsDir() {
			errs = append(errs, bad("LAB_BROWSER_DIR"))
		}
	}
	if v, ok := env["LAB_SAFETY_CPU"]; ok {
		share, err := parseShare(v)
		switch {
		case strings.EqualFold(v, "off"):
			s.Safety.Enabled = false
		case err != nil || !(share > 0 && share < 1):
			errs = append(errs, bad("LAB_SAFETY_CPU"))
		default:
			s.Safety.Config.Threshold = share
		}
	}
	if v, ok := env["LAB_SAFETY_WINDOW"]; ok {
		d, err := time.ParseDuration(v)
		if err != nil || d < 2*safety.DefaultInterval || d > time.Minute {
			errs = append(errs, bad("LAB_SAFETY_WINDOW"))
		}
		s.Safety.Config.Window = d
	}
	if v, ok := env["LAB_RESUME"]; ok {
		switch m := JournalMode(v); m {
		case JournalOff, JournalResume, JournalFresh:
			s.Resume = m
		default:
			errs = append(errs, bad("LAB_RESUME"))
		}
	}
	if v, ok := env["LAB_SHARD"]; ok {
		sh, err := ParseShard(v)
		if err != nil {
			errs = append(errs, bad("LAB_SHARD"))
		}
		s.Shard = sh
	}
	if v, ok := env["LAB_REPORT_DIR"]; ok {
		if v == "" {
			errs = append(errs, bad("LAB_REPORT_DIR"))
		} else if err := tryWrite(v); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", bad("LAB_REPORT_DIR"), err))
		}
		s.ReportDir = v
	}
	for name, dst := range map[string]*string{"LAB_DEBIAN_MIRROR": &s.Apt.Mirror, "LAB_DEBIAN_SECURITY": &s.Apt.Security} {
		if v, ok := env[name]; ok {
			if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || strings.ContainsAny(v, " \t'\"") {
				errs = append(errs, bad(name))
			}
			*dst = v
		}
	}
	if s.Apt.Security != "" && s.Apt.Mirror == "" {
		errs = append(errs, fmt.Errorf("LAB_DEBIAN_SECURITY=%q: want it with LAB_DEBIAN_MIRROR (without, the host's own apt sources are used whole)", s.Apt.Security))
	}
	if v, ok := env["LAB_STACK"]; ok {
		if !filepath.IsAbs(v) {
			v = filepath.Join(root, v)
		}
		f, err := stackfile.Load(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("LAB_STACK: %w", err))
		}
		s.Stack = &f
	}
	if v, ok := env["LAB_KUBE_BIN"]; ok {
		if fi, err := os.Stat(v); err != nil || !fi.IsDir() || !filepath.IsAbs(v) {
			errs = append(errs, bad("LAB_KUBE_BIN"))
		}
		s.KubeBin = v
	}
	if v, ok := env["LAB_IMAGE_RECORD"]; ok {
		r, err := report.ReadImageRecord(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", bad("LAB_IMAGE_RECORD"), err))
		}
		s.ImageRecord = &r
	}
	if len(errs) > 0 {
		return Settings{}, errors.Join(errs...)
	}
	return s, nil
}

// Plan is what this process runs of the profile's article A, sweep,
// matrix and streaming table: its shard of Table.
func (s Settings) Plan() Plan { return s.Table().Shard(s.Shard) }

// Table is the whole series the profile plans, every shard's, with the
// runs per sweep cell and per matrix cell as LAB_SWEEP_RUNS and
// LAB_MATRIX_RUNS set them.
func (s Settings) Table() Plan {
	p := Plans[s.Profile]
	if s.SweepRuns > 0 {
		p.SweepRuns = s.SweepRuns
	}
	if s.MatrixRuns > 0 {
		p.MatrixRuns, p.StreamRuns, p.ExhaustionRuns = s.MatrixRuns, s.MatrixRuns, s.MatrixRuns
	}
	return p
}

// parseShare reads "0.9" or "90%".
func parseShare(v string) (float64, error) {
	if p, ok := strings.CutSuffix(v, "%"); ok {
		f, err := strconv.ParseFloat(p, 64)
		return f / 100, err
	}
	return strconv.ParseFloat(v, 64)
}

// tryWrite checks that dir, or the nearest existing directory above it,
// takes a new file, and removes the file again.
func tryWrite(dir string) error {
	d := dir
	for {
		st, err := os.Stat(d)
		if err == nil {
			if !st.IsDir() {
				return fmt.Errorf("%s is not a directory", d)
			}
			break
		}
		if !errors.Is(err, os.ErrNotExist) {
			return err
		}
		up := filepath.Dir(d)
		if up == d {
			return fmt.Errorf("no directory of %s exists", dir)
		}
		d = up
	}
	f, err := os.CreateTemp(d, ".lab-write-check-*")
	if err != nil {
		return fmt.Errorf("cannot write in %s: %w", d, err)
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}
