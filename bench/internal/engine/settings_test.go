package engine

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"wsgilab/bench/internal/disturb"
	"wsgilab/bench/internal/image"
	"wsgilab/bench/internal/report"
	"wsgilab/bench/internal/safety"
	"wsgilab/bench/internal/verdict"
)

func TestSettingsDefaults(t *testing.T) {
	s, err := ParseSettings([]string{"PATH=/bin", "HOME=/root"}, "/mod")
	require.NoError(t, err)
	assert.Equal(t, Settings{Runs: DefaultRuns, Profile: DefaultProfile, ReportDir: "/mod/reports/out",
		Safety: SafetySettings{Enabled: true, Config: safety.DefaultConfig(), Redo: disturb.DefaultRule()}, Resume: JournalOff}, s)
}

func TestSettingsGood(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "not", "yet")
	s, err := ParseSettings([]string{"LAB_RUNS=5", "LAB_PROFILE=full", "LAB_QUIET=yes", "LAB_REPORT_DIR=" + dir,
		"LAB_SAFETY_CPU=75%", "LAB_SAFETY_WINDOW=3s", "LAB_RESUME=1", "LAB_MATRIX_RUNS=4"}, "/mod")
	require.NoError(t, err)
	want := safety.DefaultConfig()
	want.Threshold, want.Window = 0.75, 3*time.Second
	assert.Equal(t, Settings{Runs: 5, Profile: "full", ReportDir: dir, Quiet: true, Resume: JournalResume,
		Safety: SafetySettings{Enabled: true, Config: want, Redo: disturb.DefaultRule()}, MatrixRuns: 4}, s)
	assert.Equal(t, 4, s.Plan().MatrixRuns)
	off, err := ParseSettings([]string{"LAB_SAFETY_CPU=off"}, "/mod")
	require.NoError(t, err)
	assert.False(t, off.Safety.Enabled)
	half, err := ParseSettings([]string{"LAB_SAFETY_CPU=0.5"}, "/mod")
	require.NoError(t, err)
	assert.Equal(t, 0.5, half.Safety.Config.Threshold)
	_, err = os.Stat(dir)
	assert.ErrorIs(t, err, os.ErrNotExist, "checking the directory created nothing")
	for _, v := range []string{"1", "true", "TRUE", "0", "false", "no"} {
		_, err := ParseSettings([]string{"LAB_QUIET=" + v}, "/mod")
		assert.NoError(t, err, v)
	}
	apt, err := ParseSettings([]string{"LAB_DEBIAN_MIRROR=http://deb.debian.org/debian", "LAB_DEBIAN_SECURITY=https://security.example.org/debian-security"}, "/mod")
	require.NoError(t, err)
	assert.Equal(t, image.Apt{Mirror: "http://deb.debian.org/debian", Security: "https://security.example.org/debian-security"}, apt.Apt)
}

// Each bad value is one error naming the setting, the value and what is
// accepted; nothing is written.
// stacks holds the example and bad stack files.
var stacks, _ = filepath.Abs("../../../fixtures/stacks")

func TestSettingsBad(t *testing.T) {
	tmp := t.TempDir()
	file := filepath.Join(tmp, "a-file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	readOnly := filepath.Join(tmp, "ro")
	require.NoError(t, os.Mkdir(readOnly, 0o555))
	half := filepath.Join(tmp, "half.json")
	require.NoError(t, os.WriteFile(half, []byte(`{"base": {"ref": "wsgilab-base:1", "built": true}}`), 0o644))
	cases := []struct{ env, want string }{
		{"LAB_RUNS=0", `LAB_RUNS="0": want a whole number from 1 to 100`},
		{"LAB_RUNS=-3", `LAB_RUNS="-3": want a whole number from 1 to 100`},
		{"LAB_RUNS=101", `LAB_RUNS="101": want a whole number from 1 to 100`},
		{"LAB_RUNS=three", `LAB_RUNS="three": want a whole number`},
		{"LAB_RUNS=2.5", `LAB_RUNS="2.5": want a whole number`},
		{"LAB_RUNS=", `LAB_RUNS="": want a whole number`},
		{"LAB_MATRIX_RUNS=0", `LAB_MATRIX_RUNS="0": want a whole number from 1 to 100 (runs per matrix cell`},
		{"LAB_SWEEP_RUNS=x", `LAB_SWEEP_RUNS="x": want a whole number from 1 to 100 (runs per sweep cell`},
		{"LAB_RUNS= 3", `LAB_RUNS=" 3": want a whole number`},
		{"LAB_PROFILE=fast", `LAB_PROFILE="fast": want ci (make test) or full (make repro)`},
		{"LAB_PROFILE=CI", `LAB_PROFILE="CI": want ci`},
		{"LAB_PROFILE=", `LAB_PROFILE="": want ci`},
		{"LAB_QUIET=maybe", `LAB_QUIET="maybe": want 1, true, yes (no progress lines) or 0, false, no`},
		{"LAB_QUIET=2", `LAB_QUIET="2": want 1, true, yes`},
		{"LAB_REPORT_DIR=", `LAB_REPORT_DIR="": want a directory`},
		{"LAB_REPORT_DIR=" + file, "is not a directory"},
		{"LAB_REPORT_DIR=" + file + "/sub", "not a directory"},
		{"LAB_REPORT_DIR=/proc/1/nope", "cannot write in /proc/1"},
		{"LAB_KUBE_BIN=relative/bin", `LAB_KUBE_BIN="relative/bin": want the directory make kube-e2e built`},
		{"LAB_KUBE_BIN=/no/such", `LAB_KUBE_BIN="/no/such": want the directory`},
		{"LAB_RUN=5", `LAB_RUN="5": unknown setting; the lab reads LAB_BROWSER_DIR, LAB_DEBIAN_MIRROR, LAB_DEBIAN_SECURITY, LAB_IMAGE_RECORD, LAB_KUBE_BIN, LAB_MATRIX_RUNS, LAB_NO_BROWSER, LAB_PROFILE, LAB_QUIET, LAB_REPORT_DIR, LAB_RESUME, LAB_RUNS, LAB_SAFETY_CPU, LAB_SAFETY_WINDOW`},
		{"LAB_DEBIAN_MIRROR=deb.debian.org/debian", `LAB_DEBIAN_MIRROR="deb.debian.org/debian": want the http:// or https:// URL of a Debian archive`},
		{"LAB_DEBIAN_MIRROR=ftp://deb.debian.org/debian", `LAB_DEBIAN_MIRROR="ftp://deb.debian.org/debian": want the http:// or https:// URL`},
		{"LAB_DEBIAN_MIRROR=http://deb.debian.org/debian' ; rm -rf /", `LAB_DEBIAN_MIRROR="http://deb.debian.org/debian' ; rm -rf /": want the http:// or https:// URL`},
		{"LAB_DEBIAN_SECURITY=http://deb.debian.org/debian-security", `LAB_DEBIAN_SECURITY="http://deb.debian.org/debian-security": want it with LAB_DEBIAN_MIRROR`},
		{"LAB_SAFETY_CPU=0", `LAB_SAFETY_CPU="0": want off, or the share of the host's CPU outside the lab`},
		{"LAB_SAFETY_CPU=120%", `LAB_SAFETY_CPU="120%": want off, or the share`},
		{"LAB_SAFETY_CPU=high", `LAB_SAFETY_CPU="high": want off`},
		{"LAB_SAFETY_CPU=100%", `LAB_SAFETY_CPU="100%": want off, or the share of the host's CPU outside the lab above which the safety stop trips: a number in (0, 1)`},
		{"LAB_SAFETY_WINDOW=100ms", `LAB_SAFETY_WINDOW="100ms": want how long that share must last to trip it, a Go duration from 500ms to 1m`},
		{"LAB_SAFETY_WINDOW=2", `LAB_SAFETY_WINDOW="2": want how long`},
		{"LAB_RESUME=yes", `LAB_RESUME="yes": want 1 (journal each completed run`},
		{"LAB_NO_BROWSER=yes", `LAB_NO_BROWSER="yes": want 1 (skip the report's headless Chromium test) or 0`},
		{"LAB_BROWSER_DIR=/no/such/dir", `LAB_BROWSER_DIR="/no/such/dir": want a report directory`},
		{"LAB_PROFLE=full", `LAB_PROFLE="full": unknown setting`},
		{"LAB_IMAGE_RECORD=/no/such.json", `LAB_IMAGE_RECORD="/no/such.json": want the file cmd/labimage -record wrote (make test's image step, beside the compile): the images it found or built for this series and the base image's build output: open /no/such.json: no such file or directory`},
		{"LAB_IMAGE_RECORD=" + file, `LAB_IMAGE_RECORD="` + file + `": want the file cmd/labimage -record wrote`},
		{"LAB_IMAGE_RECORD=" + half, `an image record names both images; this one names base "wsgilab-base:1" and lab ""`},
		{"LAB_STACK=/no/such.yaml", `LAB_STACK: stack file: lstat /no/such.yaml: no such file or directory`},
		{"LAB_STACK=" + stacks + "/bad/module.yaml", `LAB_STACK: stack file ` + stacks + `/bad/module.yaml: app.module "shop": want an import path`},
	}
	if os.Geteuid() != 0 { // root writes anywhere
		cases = append(cases, struct{ env, want string }{"LAB_REPORT_DIR=" + readOnly, "cannot write in " + readOnly})
	}
	require.GreaterOrEqual(t, len(cases), 12)
	for _, tc := range cases {
		t.Run(tc.env, func(t *testing.T) {
			s, err := ParseSettings([]string{"HOME=/root", tc.env}, "/mod")
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.Zero(t, s, "no settings on error")
		})
	}
	entries, err := os.ReadDir(tmp)
	require.NoError(t, err)
	assert.Len(t, entries, 3, "only the test's own files and directory: nothing was written")
}

// Several bad values: one line each.
func TestSettingsAllBadNamed(t *testing.T) {
	_, err := ParseSettings([]string{"LAB_RUNS=0", "LAB_PROFILE=x", "LAB_QUIET=?"}, "/mod")
	require.Error(t, err)
	for _, name := range []string{"LAB_RUNS", "LAB_PROFILE", "LAB_QUIET"} {
		assert.Contains(t, err.Error(), name)
	}
}

// The servers the engine runs are the servers article B's verdicts read:
// a verdict on a server the engine never ran would be skipped as not run.
func TestServersBMatchTheVerdicts(t *testing.T) {
	var ids []string
	for _, s := range ServersB {
		ids = append(ids, s.ID)
	}
	assert.Equal(t, verdict.AllBServers, ids)
	require.NoError(t, ValidateAll(ArticleA))
}

// LAB_STACK is a stack file, relative to the module root or absolute,
// loaded and validated with the other settings.
func TestStackSetting(t *testing.T) {
	root, err := filepath.Abs("../../..")
	require.NoError(t, err)
	s, err := ParseSettings([]string{"LAB_STACK=fixtures/stacks/sync.yaml"}, root)
	require.NoError(t, err)
	require.NotNil(t, s.Stack)
	assert.Equal(t, "shop-sync", s.Stack.Name)
	assert.Equal(t, filepath.Join(root, "fixtures/stacks"), s.Stack.Dir)
}

// LAB_IMAGE_RECORD is read with the other settings: make test's image
// step wrote it, and the series reports the builds it records.
func TestImageRecordSetting(t *testing.T) {
	path := filepath.Join(t.TempDir(), "image.json")
	rec := report.ImageRecord{Base: report.Image{Ref: "wsgilab-base:1", Built: true, SourcesHidden: true},
		Lab: report.Image{Ref: "wsgilab:2", Built: true}, Log: "build.sh: Debian archive x\n"}
	require.NoError(t, report.WriteFile(filepath.Dir(path), filepath.Base(path), report.JSON(rec)))
	s, err := ParseSettings([]string{"LAB_IMAGE_RECORD=" + path}, "/mod")
	require.NoError(t, err)
	require.NotNil(t, s.ImageRecord)
	assert.Equal(t, rec, *s.ImageRecord)
}
