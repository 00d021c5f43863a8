// Command labreport re-renders report.html from an existing report
// directory, with no new runs:
//
//	labreport [-dir reports/out]
//
// It reads only the directory's JSON files (reports/README.md) and writes
// DIR/report.html atomically; on failure it prints the error and exits 1.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"wsgilab/bench/internal/htmlreport"
	"wsgilab/bench/internal/report"
)

func main() {
	dir := flag.String("dir", report.DefaultDir, "the report directory to render")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: labreport [-dir DIR]\n\nRenders DIR/%s from DIR's report files.\n\n", htmlreport.FileName)
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := htmlreport.Write(*dir); err != nil {
		fmt.Fprintln(os.Stderr, "labreport:", err)
		os.Exit(1)
	}
	fmt.Println(filepath.Join(*dir, htmlreport.FileName))
}
