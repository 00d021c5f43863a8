// Command labreport re-renders report.html from an existing report
// directory, with no new runs:
//
//	labreport [-dir reports/out] [-readme README.md]
//
// It reads only the directory's JSON files (reports/README.md) and writes
// DIR/report.html atomically; on failure it prints the error and exits 1.
// With -readme it instead rewrites that file's generated section ("which
// setup protects against which slow client") from DIR/matrix.json, and
// renders nothing.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"wsgilab/bench/internal/htmlreport"
	"wsgilab/bench/internal/readme"
	"wsgilab/bench/internal/report"
)

func main() {
	dir := flag.String("dir", report.DefaultDir, "the report directory to render")
	readmePath := flag.String("readme", "", "rewrite this README's generated protection section from DIR/matrix.json instead of rendering report.html")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: labreport [-dir DIR] [-readme README.md]\n\nRenders DIR/%s from DIR's report files.\n\n", htmlreport.FileName)
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	out, err := filepath.Join(*dir, htmlreport.FileName), error(nil)
	if *readmePath != "" {
		out, err = *readmePath, rewriteReadme(*readmePath, *dir)
	} else {
		err = htmlreport.Write(*dir)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "labreport:", err)
		os.Exit(1)
	}
	fmt.Println(out)
}

// rewriteReadme splices the protection section of dir's matrix.json into
// the file at path, through a temporary file renamed over it.
func rewriteReadme(path, dir string) error {
	m, err := readme.Load(filepath.Join(dir, readme.MatrixFile))
	if err != nil {
		return err
	}
	var b strings.Builder
	if err := readme.Protection(m)(&b); err != nil {
		return err
	}
	doc, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, err := readme.Splice(string(doc), b.String())
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(out), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
