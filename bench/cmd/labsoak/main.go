// Command labsoak folds the report directories of several series (make
// soak) into how often each verdict held and each figure's spread, and
// writes that section into a markdown file, replacing its earlier one:
//
//	labsoak -md reports/measurements.md reports/soak/1 reports/soak/2 ...
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"wsgilab/bench/internal/report"
	"wsgilab/bench/internal/soak"
)

func main() {
	md := flag.String("md", "", "the markdown file whose soak section to replace (stdout when empty)")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: labsoak [-md FILE] DIR...")
		os.Exit(2)
	}
	s, err := soak.Read(flag.Args())
	if err != nil {
		fmt.Fprintln(os.Stderr, "labsoak:", err)
		os.Exit(1)
	}
	var b bytes.Buffer
	s.Markdown(&b)
	if *md == "" {
		os.Stdout.Write(b.Bytes())
		return
	}
	doc, err := os.ReadFile(*md)
	if err != nil {
		fmt.Fprintln(os.Stderr, "labsoak:", err)
		os.Exit(1)
	}
	out := soak.Splice(string(doc), b.String())
	if err := report.WriteFile(filepath.Dir(*md), filepath.Base(*md), func(w io.Writer) error {
		_, err := io.WriteString(w, out)
		return err
	}); err != nil {
		fmt.Fprintln(os.Stderr, "labsoak:", err)
		os.Exit(1)
	}
}
