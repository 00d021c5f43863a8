// Package report writes the lab's report files. A reporter is a
// func(io.Writer) error; the harness picks the paths, and WriteFile makes
// each file appear whole or not at all; AppendFile adds a run's lines to a
// JSON-lines file that only grows.
package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// DefaultDir is the report directory relative to the module root, used
// when LAB_REPORT_DIR is unset.
const DefaultDir = "reports/out"

// Reporter writes one report.
type Reporter func(io.Writer) error

// JSON is a Reporter of v as indented JSON.
func JSON(v any) Reporter {
	return func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
}

// WriteFile runs r into a temporary file in dir and renames it to name, so
// a reader never sees half a report and a failed write leaves the old one.
func WriteFile(dir, name string, r Reporter) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	f, err := os.CreateTemp(dir, "."+name+".tmp-*")
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	defer os.Remove(f.Name())              // no-op after the rename
	if err := f.Chmod(0o644); err != nil { // CreateTemp makes 0600; reports are for everyone
		f.Close()
		return fmt.Errorf("report: %w", err)
	}
	if err := r(f); err != nil {
		f.Close()
		return fmt.Errorf("report: write %s: %w", name, err)
	}
	// Synced before the rename, and the directory after it: a crash or a
	// power cut leaves the old file or the new one, never an empty one (a
	// resumed series reads its journal from these files).
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("report: write %s: %w", name, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("report: write %s: %w", name, err)
	}
	if err := os.Rename(f.Name(), filepath.Join(dir, name)); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// AppendFile runs r into memory and appends the bytes to name in dir in
// one write, creating the file; fresh starts it afresh instead. It is for
// JSON-lines files that only grow (a run's rows): each run's lines are
// written once, never rewritten. A failed write leaves the lines before
// it whole.
func AppendFile(dir, name string, r Reporter, fresh bool) error {
	var buf bytes.Buffer
	if err := r(&buf); err != nil {
		return fmt.Errorf("report: write %s: %w", name, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	flag := os.O_CREATE | os.O_WRONLY | os.O_APPEND
	if fresh {
		flag |= os.O_TRUNC
	}
	f, err := os.OpenFile(filepath.Join(dir, name), flag, 0o644)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if _, err := f.Write(buf.Bytes()); err != nil {
		f.Close()
		return fmt.Errorf("report: append to %s: %w", name, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("report: append to %s: %w", name, err)
	}
	return nil
}
