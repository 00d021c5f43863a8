// Command labreport re-renders report.html from an existing report
// directory, with no new runs:
//
//	labreport [-dir reports/out]
//	labreport -docs [-packages-from reports/out]
//	labreport -merge [-allow-mismatch] -dir OUT SHARD_DIR...
//
// It reads only the directory's JSON files (reports/README.md) and writes
// DIR/report.html atomically; on failure it prints the error and exits 1.
// With -docs it instead rewrites the documents' generated parts
// (readme.Docs: the protection table, the matrix's picture, the make check
// transcript) from their committed report files, run from the module
// root (make docs); with -packages-from, also the stack-file reference's
// list of the image's Python packages from that series' environment.json.
//
// With -merge it merges the report directories of a sharded series
// (LAB_SHARD=i/N, one per shard) into the new or empty directory OUT,
// judges every verdict on the merged data (engine.Merge), renders
// OUT/report.html and prints each verdict; it exits 1 when a verdict fails
// or its data is missing, or a condition of the series' table was never
// started (unless -partial), and refuses shards that are not one series,
// or ran on machines that differ (unless -allow-mismatch), before writing
// anything.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"wsgilab/bench/internal/engine"
	"wsgilab/bench/internal/htmlreport"
	"wsgilab/bench/internal/readme"
	"wsgilab/bench/internal/report"
)

func main() {
	dir := flag.String("dir", report.DefaultDir, "the report directory to render")
	docs := flag.Bool("docs", false, "rewrite the documents' generated parts from their committed report files (run from the module root) instead of rendering report.html")
	packagesFrom := flag.String("packages-from", "", "with -docs: also rewrite fixtures/stacks/README.md's Python packages from this series' environment.json (a report directory)")
	merge := flag.Bool("merge", false, "merge the shard report directories given as arguments into DIR (new or empty), judge the verdicts on the merged data and render it")
	allow := flag.Bool("allow-mismatch", false, "with -merge: merge shards whose machines differ (CPU model, CPUs, kernel, cgroup version, CFS period, engine), recording each difference")
	partial := flag.Bool("partial", false, "with -merge: exit 0 though conditions of the series' table were never started (the verdicts that read them are not run)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: labreport [-dir DIR]\n       labreport -docs [-packages-from DIR]\n       labreport -merge [-allow-mismatch] -dir OUT SHARD_DIR...\n\nRenders DIR/%s from DIR's report files, or merges a sharded series into DIR.\n\n", htmlreport.FileName)
		flag.PrintDefaults()
	}
	flag.Parse()
	if *merge {
		os.Exit(runMerge(*dir, flag.Args(), engine.MergeOptions{AllowMismatch: *allow}, *partial))
	}
	if flag.NArg() > 0 || *allow || *partial {
		flag.Usage()
		os.Exit(2)
	}
	if *docs {
		os.Exit(writeDocs(*packagesFrom))
	}
	if *packagesFrom != "" {
		flag.Usage()
		os.Exit(2)
	}
	if err := htmlreport.Write(*dir); err != nil {
		fmt.Fprintln(os.Stderr, "labreport:", err)
		os.Exit(1)
	}
	fmt.Println(filepath.Join(*dir, htmlreport.FileName))
}

// writeDocs rewrites every generated part of the documents, printing each.
func writeDocs(packagesFrom string) int {
	docs := slices.Clone(readme.Docs)
	froms := make([]string, len(docs))
	for i, d := range docs {
		froms[i] = d.From
	}
	if packagesFrom != "" {
		docs, froms = append(docs, readme.PackagesDoc), append(froms, packagesFrom)
	}
	for i, d := range docs {
		if err := d.Write(".", froms[i]); err != nil {
			fmt.Fprintln(os.Stderr, "labreport:", err)
			return 1
		}
		fmt.Printf("%s %s <- %s\n", d.Path, d.Section, froms[i])
	}
	return 0
}

// runMerge merges shards into out, renders it and prints every verdict:
// 0 when none failed or lacked data, 1 otherwise, 2 for bad arguments.
func runMerge(out string, shards []string, o engine.MergeOptions, partial bool) int {
	if len(shards) == 0 {
		fmt.Fprintln(os.Stderr, "labreport -merge: want the shards' report directories as arguments")
		return 2
	}
	m, err := engine.Merge(out, shards, o)
	if err == nil {
		err = htmlreport.Write(out)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "labreport:", err)
		return 1
	}
	for _, d := range m.Mismatches {
		fmt.Printf("allowed mismatch: %s\n", d)
	}
	if len(m.LeftOut) > 0 {
		fmt.Printf("not merged (outside the series' table; raw records copied): %s\n", strings.Join(m.LeftOut, ", "))
	}
	code, notRun := 0, 0
	if len(m.Unrun) > 0 {
		fmt.Printf("not started by any shard (%d of the table's conditions): %s\n", len(m.Unrun), strings.Join(m.Unrun, ", "))
		if !partial {
			code = 1
			fmt.Println("the series is partial: -partial accepts that")
		}
	}
	for _, c := range m.Claims {
		switch c.Status {
		case report.StatusNotRun:
			notRun++
			continue
		case report.StatusHolds:
			fmt.Printf("holds    %-48s measured %.4g %s, threshold %s\n", c.ID, c.Measured, c.Unit, c.Threshold)
		case report.StatusMissing:
			code = 1
			fmt.Printf("MISSING  %-48s %s\n", c.ID, c.Note)
		case report.StatusTooBusy:
			code = 1
			fmt.Printf("TOO BUSY %-48s %s\n", c.ID, c.Note)
		default:
			code = 1
			fmt.Printf("FAILS    %-48s measured %.4g %s, threshold %s\n", c.ID, c.Measured, c.Unit, c.Threshold)
			if c.Note != "" {
				fmt.Printf("         %-48s %s\n", "", c.Note)
			}
		}
	}
	fmt.Printf("%d conditions from %d shards, %d verdicts not run -> %s\n", len(m.Conditions), len(shards), notRun, filepath.Join(out, htmlreport.FileName))
	return code
}
