// Package docs holds the lab's documents to the tree: every path, make
// target and LAB_* name they cite exists, every host setting is in the
// settings table, and the Makefile does what they say of it (Ctrl-C ends
// the whole job; make turns every failing recipe into exit 2).
package docs

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"wsgilab/bench/internal/engine"
)

const root = "../../.."

// documents are the lab's documents, relative to the module root.
var documents = []string{
	"README.md",
	"bench/README.md",
	"fixtures/stacks/README.md",
	"reports/README.md",
	"reports/measurements.md",
	"fixtures/report/README.md",
	"fixtures/machine/README.md",
}

var (
	codeSpan = regexp.MustCompile("`([^`\n]+)`")
	mdLink   = regexp.MustCompile(`\]\(([^)#\s]+)(#[^)]*)?\)`)
	makeCmd  = regexp.MustCompile(`\bmake ([a-z][a-z0-9-]*)\b`)
	labName  = regexp.MustCompile(`\bLAB_[A-Z][A-Z_]*[A-Z]\b`)
	// A repository path: under a top-level directory of the lab, or one
	// of its top-level files.
	repoPath = regexp.MustCompile(`^(bench|fixtures|nginxconf|wsgiapp|reports)/[A-Za-z0-9_.*/-]*$|^(go\.mod|go\.sum|Makefile|README\.md)$`)
	// What runs write and no checkout holds.
	runtimePath = regexp.MustCompile(`^reports/(out|soak|kube|shard\d|merged|kube-runs|kube-merged)(/|$)`)
)

func read(t *testing.T, doc string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, doc))
	require.NoError(t, err)
	return string(b)
}

// Every repository path a document names in code or links to exists
// (globs match something), relative to the module root or to the
// document's own directory.
func TestDocumentPathsExist(t *testing.T) {
	for _, doc := range documents {
		t.Run(doc, func(t *testing.T) {
			text := read(t, doc)
			var cited []string
			for _, m := range codeSpan.FindAllStringSubmatch(text, -1) {
				for _, f := range strings.Fields(m[1]) {
					f = strings.Trim(f, ",;:()'\"")
					if _, after, ok := strings.Cut(f, "="); ok {
						f = after
					}
					if repoPath.MatchString(f) {
						cited = append(cited, f)
					}
				}
			}
			for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
				if !strings.Contains(m[1], "://") {
					cited = append(cited, m[1])
				}
			}
			for _, p := range cited {
				if runtimePath.MatchString(p) {
					continue
				}
				found := false
				for _, base := range []string{root, filepath.Join(root, filepath.Dir(doc))} {
					matches, _ := filepath.Glob(filepath.Join(base, strings.TrimSuffix(p, "/")))
					found = found || len(matches) > 0
				}
				assert.True(t, found, "%s cites %q, which the tree does not hold", doc, p)
			}
		})
	}
}

// code is what a document holds as code: its code spans and the lines
// of its fenced blocks.
func code(text string) []string {
	var out []string
	fenced := false
	for line := range strings.Lines(text) {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			out = append(out, line)
		}
	}
	for _, m := range codeSpan.FindAllStringSubmatch(text, -1) {
		out = append(out, m[1])
	}
	return out
}

// Every make target a document names in code is one of the Makefile's.
func TestDocumentTargetsExist(t *testing.T) {
	targets := makeTargets(t)
	for _, doc := range documents {
		for _, m := range makeCmd.FindAllStringSubmatch(strings.Join(code(read(t, doc)), "\n"), -1) {
			assert.True(t, slices.Contains(targets, m[1]), "%s names make %s, which the Makefile lacks", doc, m[1])
		}
	}
}

func makeTargets(t *testing.T) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(root, "Makefile"))
	require.NoError(t, err)
	defer f.Close()
	var out []string
	re := regexp.MustCompile(`^([a-z][a-z0-9-]*):`)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			out = append(out, m[1])
		}
	}
	return out
}

// make test's own files in the report directory (gotestsum's streams, the
// image step's record and log) are none of the files a series writes
// there (reports/README.md's table): a series rewrites its files whole by
// renaming over them, and would replace one of make test's under it, as
// series.json once replaced the series' go test -json stream.
func TestMakeTestFilesAreNotReportFiles(t *testing.T) {
	mk := read(t, "Makefile")
	recipe := mk[strings.Index(mk, "\ntest:"):]
	recipe = recipe[:strings.Index(recipe, "\n\n")]
	own := map[string]bool{}
	for _, m := range regexp.MustCompile(`\$\(LAB_REPORT_DIR\)/([A-Za-z0-9._-]+)`).FindAllStringSubmatch(recipe, -1) {
		own[m[1]] = true
	}
	require.Contains(t, own, "test.json", "the check reads make test's recipe")
	table := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([^`]+)` \\|").FindAllStringSubmatch(read(t, "reports/README.md"), -1) {
		table[m[1]] = true
	}
	require.Contains(t, table, "series.json", "the check reads the report files' table")
	for name := range own {
		assert.False(t, table[name], "make test writes %s into the report directory, where a series writes its own %s", name, name)
	}
}

// Every LAB_* name a document cites is a setting the lab reads on the
// host, or a variable the lab sets inside its containers (its sources say
// which); and every host setting is in bench/README.md's settings table.
func TestDocumentSettingsExist(t *testing.T) {
	host := engine.SettingNames()
	inside := containerNames(t)
	for _, doc := range documents {
		for line := range strings.Lines(read(t, doc)) {
			if strings.Contains(line, "unknown setting") {
				continue // an example of the error a misspelt name gets
			}
			for _, name := range labName.FindAllString(line, -1) {
				if !slices.Contains(host, name) && !inside[name] {
					t.Errorf("%s names %s: neither a host setting (engine.SettingNames) nor a variable the lab sets in a container", doc, name)
				}
			}
		}
	}
	manual := read(t, "bench/README.md")
	for _, name := range host {
		assert.True(t, strings.Contains(manual, "| `"+name+"` |"), "bench/README.md's settings table lacks %s", name)
	}
}

// containerNames are the LAB_* variables the lab's own sources set or
// read inside its containers: the apps' and the pod roles'.
func containerNames(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	re := regexp.MustCompile(`"(LAB_[A-Z_]+)`)
	for _, dir := range []string{"wsgiapp", "bench/internal/podspec", "bench/internal/podrun", "bench/internal/kube", "bench/internal/stack", "bench/internal/proxy"} {
		files, err := filepath.Glob(filepath.Join(root, dir, "*"))
		require.NoError(t, err)
		for _, f := range files {
			if st, err := os.Stat(f); strings.HasSuffix(f, "_test.go") || err == nil && st.IsDir() {
				continue
			}
			b, err := os.ReadFile(f)
			require.NoError(t, err)
			for _, m := range re.FindAllStringSubmatch(string(b), -1) {
				out[m[1]] = true
			}
		}
	}
	return out
}

// makeWith runs make in a copy of the Makefile whose go is stub, so the
// recipes' own logic runs and nothing else.
func makeWith(t *testing.T, stub string, args ...string) *exec.Cmd {
	t.Helper()
	dir := t.TempDir()
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "Makefile"), mk, 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "bench"), 0o755)) // make repro's go test runs there
	goStub := filepath.Join(dir, "go")
	require.NoError(t, os.WriteFile(goStub, []byte("#!/usr/bin/env bash\n"+stub), 0o755))
	cmd := exec.Command("make", append([]string{"-s", "-o", "deps", "-o", "settings", "SETUP=true", "GO=" + goStub}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "LAB_REPORT_DIR="+filepath.Join(dir, "out"), "STUB_DIR="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd
}

// Ctrl-C ends the whole job: make repro's series is interrupted, and the
// browser test after it never starts; make test's report is not
// rendered after an interrupted series either, nor does make soak go on
// to its next series.
func TestInterruptEndsTheJob(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make here")
	}
	// The stub's series sleeps until interrupted; anything after it
	// leaves a mark.
	// make test's steps before its series (the tools' build, which
	// leaves tools that exit 0, the compile, the package list and the
	// unit packages) do nothing here.
	stub := `case "$*" in
*TestBrowser*|*labreport*|*labsoak*) touch "$STUB_DIR/after" ;;
"build -o "*) dir=$3; shift 3; for p in "$@"; do printf '#!/bin/sh\nexit 0\n' >"$dir/${p##*/}"; chmod +x "$dir/${p##*/}"; done ;;
"test -c -o "*" ./..."|"list ./..."|*"testbin.sh "*" 20m "*) ;;
*) trap 'exit 1' INT; [ -e "$STUB_DIR/started" ] && touch "$STUB_DIR/after"; touch "$STUB_DIR/started"; sleep 30 & wait ;;
esac
`
	for _, target := range []string{"repro", "test", "soak"} {
		t.Run(target, func(t *testing.T) {
			cmd := makeWith(t, stub, target, "N=2")
			require.NoError(t, cmd.Start())
			dir := cmd.Dir
			deadline := time.Now().Add(10 * time.Second)
			for {
				if _, err := os.Stat(filepath.Join(dir, "started")); err == nil {
					break
				}
				require.True(t, time.Now().Before(deadline), "the stub's series never started")
				time.Sleep(20 * time.Millisecond)
			}
			// Ctrl-C: SIGINT to the whole foreground process group.
			require.NoError(t, syscall.Kill(-cmd.Process.Pid, syscall.SIGINT))
			err := cmd.Wait()
			require.Error(t, err, "an interrupted job fails")
			_, statErr := os.Stat(filepath.Join(dir, "after"))
			assert.True(t, os.IsNotExist(statErr), "make %s went on after Ctrl-C", target)
		})
	}
}

// GNU make turns every failing recipe into exit 2: make gate exits 2
// both for a regression (labgate: 1) and for an undecided comparison
// (labgate: 2), so a CI step that must tell them apart calls labgate
// itself, as the example workflow does.
func TestMakeKeepsNoExitCode(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make here")
	}
	for _, code := range []string{"1", "2"} {
		cmd := makeWith(t, "exit "+code+"\n", "gate", "BASE=a", "NEW=b")
		err := cmd.Run()
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit)
		assert.Equal(t, 2, exit.ExitCode(), "make gate when labgate exits %s", code)
	}
}
