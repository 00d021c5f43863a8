package htmlreport

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"wsgilab/bench/internal/report"
)

// testEvent is one line of test.json, the `go test -json` stream
// (cmd/test2json's TestEvent).
type testEvent struct {
	Time    string  `json:"Time,omitempty"`
	Action  string  `json:"Action"`
	Package string  `json:"Package"`
	Test    string  `json:"Test"`
	Elapsed float64 `json:"Elapsed"`
	Output  string  `json:"Output"`
}

// files is a report directory as read: any file may be absent, and is then
// nil (a present but empty list is non-nil).
type files struct {
	conditions []report.Condition
	runs       []report.Run
	requests   []report.Request
	downloads  []report.Download
	claims     []report.Claim
	series     *report.Series
	env        *report.Environment
	resources  []report.ResourceRow
	sockets    []report.SocketRow
	tempfiles  []report.TempFileRow
	throughput []report.Throughput
	tests      []testEvent
	// sweep is sweep.json. The sweep's own cells of conditions.json (ids
	// "sweep-…") are kept out of conditions: article A's sections do not
	// show them.
	sweep *report.Sweep
	// matrix is matrix.json; its own conditions (ids "matrix-…" and
	// "capacity-…") are kept out of conditions too.
	matrix *report.Matrix
	// exhaustion is exhaustion.json; its cells (ids "exhaustion-…"), the
	// scale columns' steps (ids "scale-…") and the connection-limit cells
	// (ids "limit-…", both matrix.json's) are kept out of conditions as
	// well.
	exhaustion *report.Exhaustion
	// stacks is stacks.json, the stack checks; their steps (ids
	// "stack-…") are kept out of conditions as well.
	stacks []report.Stack
}

// reportFiles are the files load reads; a directory needs one of them.
var reportFiles = []string{"conditions.json", "runs.json", "requests.jsonl", "downloads.json", "claims.json",
	"series.json", "environment.json", "sweep.json", "matrix.json", "exhaustion.json", "stacks.json", "resources.jsonl", "sockets.jsonl", "tempfiles.jsonl", "throughput.json",
	"test.json"}

// load reads the report files of dir. Each may be absent (an article B
// series has no conditions.json), but not all of them; any file that is
// present must parse.
func load(dir string) (*files, error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("htmlreport: %w", err)
	}
	found := false
	for _, name := range reportFiles {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			found = true
			break
		}
	}
	if !found {
		return nil, fmt.Errorf("htmlreport: %s is not a report directory: none of %s is there",
			dir, strings.Join(reportFiles, ", "))
	}
	f := &files{}
	var err error
	for _, o := range []struct {
		name string
		v    any
	}{
		{"conditions.json", &f.conditions},
		{"runs.json", &f.runs},
		{"downloads.json", &f.downloads},
		{"claims.json", &f.claims},
		{"throughput.json", &f.throughput},
		{"stacks.json", &f.stacks},
	} {
		if _, err := readJSON(dir, o.name, o.v); err != nil {
			return nil, err
		}
	}
	if f.conditions != nil {
		var article []report.Condition
		for _, c := range f.conditions {
			if !strings.HasPrefix(c.ID, "sweep-") && !strings.HasPrefix(c.ID, "matrix-") && !strings.HasPrefix(c.ID, "capacity-") &&
				!strings.HasPrefix(c.ID, "stack-") && !strings.HasPrefix(c.ID, "exhaustion-") &&
				!strings.HasPrefix(c.ID, "scale-") && !strings.HasPrefix(c.ID, "limit-") {
				article = append(article, c)
			}
		}
		f.conditions = append([]report.Condition{}, article...)
	}
	var sw report.Sweep
	if ok, err := readJSON(dir, "sweep.json", &sw); err != nil {
		return nil, err
	} else if ok {
		f.sweep = &sw
	}
	var m report.Matrix
	if ok, err := readJSON(dir, "matrix.json", &m); err != nil {
		return nil, err
	} else if ok {
		f.matrix = &m
	}
	var ex report.Exhaustion
	if ok, err := readJSON(dir, "exhaustion.json", &ex); err != nil {
		return nil, err
	} else if ok {
		f.exhaustion = &ex
	}
	var s report.Series
	if ok, err := readJSON(dir, "series.json", &s); err != nil {
		return nil, err
	} else if ok {
		f.series = &s
	}
	var e report.Environment
	if ok, err := readJSON(dir, "environment.json", &e); err != nil {
		return nil, err
	} else if ok {
		f.env = &e
	}
	if f.requests, err = readLines[report.Request](dir, "requests.jsonl"); err != nil {
		return nil, err
	}
	if f.resources, err = readLines[report.ResourceRow](dir, "resources.jsonl"); err != nil {
		return nil, err
	}
	if f.sockets, err = readLines[report.SocketRow](dir, "sockets.jsonl"); err != nil {
		return nil, err
	}
	if f.tempfiles, err = readLines[report.TempFileRow](dir, "tempfiles.jsonl"); err != nil {
		return nil, err
	}
	if f.tests, err = readLines[testEvent](dir, "test.json"); err != nil {
		return nil, err
	}
	return f, nil
}

// readJSON decodes dir/name into v; ok is false when the file does not
// exist. A JSON null leaves v as it was.
func readJSON(dir, name string, v any) (ok bool, err error) {
	path := filepath.Join(dir, name)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("htmlreport: %s: %w", path, err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(v); err != nil {
		return false, fmt.Errorf("htmlreport: %s: malformed: %w", path, err)
	}
	if dec.More() {
		return false, fmt.Errorf("htmlreport: %s: malformed: data after the JSON value", path)
	}
	// A list file that holds null still counts as present.
	switch p := v.(type) {
	case *[]report.Condition:
		if *p == nil {
			*p = []report.Condition{}
		}
	case *[]report.Run:
		if *p == nil {
			*p = []report.Run{}
		}
	case *[]report.Download:
		if *p == nil {
			*p = []report.Download{}
		}
	case *[]report.Claim:
		if *p == nil {
			*p = []report.Claim{}
		}
	case *[]report.Throughput:
		if *p == nil {
			*p = []report.Throughput{}
		}
	}
	return true, nil
}

// readLines decodes dir/name as JSON lines; nil when the file does not
// exist, non-nil (perhaps empty) when it does. Blank lines are skipped.
func readLines[T any](dir, name string) ([]T, error) {
	path := filepath.Join(dir, name)
	fh, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("htmlreport: %s: %w", path, err)
	}
	defer fh.Close()
	rows := []T{}
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var r T
		if err := json.Unmarshal(line, &r); err != nil {
			return nil, fmt.Errorf("htmlreport: %s:%d: malformed: %w", path, n, err)
		}
		rows = append(rows, r)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("htmlreport: %s: %w", path, err)
	}
	return rows, nil
}
