// Command labkube renders a series as Kubernetes Indexed Jobs, and turns
// what their pods printed back into a report directory:
//
//	labkube render -image REF -nodes N [-profile ci] [-table a] [-series NAME] [-namespace wsgilab] -o DIR
//
// writes DIR/namespace.yaml (the namespace and its admission policy,
// kube.Policy) and DIR/<job>.yaml, each a run table (ConfigMap) and its
// Job (package kube), for kubectl apply: namespace.yaml first. -table picks article A's
// conditions (a), the sweep, the matrix, the streaming table or all.
//
//	labkube collect -profile ci -series NAME [-allow-mismatch] -dir OUT RECORDS...
//
// reads the raw records the Jobs' clients printed (files of one JSON
// record per line: kubectl logs of each pod's client) and writes them as
// one shard's report directory in OUT, for labreport -merge, which judges
// the verdicts. Bad flags or records are refused before anything is
// written; it exits 1 on any error.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"wsgilab/bench/internal/engine"
	"wsgilab/bench/internal/kube"
	"wsgilab/bench/internal/report"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: labkube render|collect [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "render":
		err = render(os.Args[2:])
	case "collect":
		err = collect(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q (want render or collect)", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "labkube:", err)
		os.Exit(1)
	}
}

func render(args []string) error {
	fs := flag.NewFlagSet("render", flag.ContinueOnError)
	img := fs.String("image", "", "the lab image's reference as imported on every node (environment.json's lab_image.ref)")
	nodes := fs.Int("nodes", 0, "the node pool's size: each Job's parallelism")
	profile := fs.String("profile", engine.DefaultProfile, "LAB_PROFILE whose table renders")
	table := fs.String("table", "a", "a, sweep, matrix, stream, exhaustion or all")
	series := fs.String("series", "", "the Jobs' name prefix (default wsgilab-<table>)")
	ns := fs.String("namespace", kube.DefaultNamespace, "the Jobs' namespace")
	out := fs.String("o", "", "the directory the manifests go to")
	if err := fs.Parse(args); err != nil {
		return err
	}
	plan, ok := engine.Plans[*profile]
	if !ok {
		return fmt.Errorf("-profile %q: want ci or full", *profile)
	}
	var conds []engine.Condition
	runs := map[string]int{}
	names := []string{*table}
	if *table == "all" {
		names = []string{"a", "sweep", "matrix", "stream", "exhaustion"}
	}
	for _, n := range names {
		pick, ok := kube.Tables[n]
		if !ok {
			return fmt.Errorf("-table %q: want a, sweep, matrix, stream, exhaustion or all", *table)
		}
		cs, r := pick(plan)
		for _, c := range cs {
			if err := kube.Renderable(c); err != nil {
				fmt.Fprintln(os.Stderr, "labkube: left out:", err)
				continue
			}
			conds, runs[c.ID] = append(conds, c), r(c)
		}
	}
	if *out == "" {
		return errors.New("-o: want the directory the manifests go to")
	}
	if *series == "" {
		*series = "wsgilab-" + *table
	}
	jobs, err := kube.Render(conds, func(c engine.Condition) int { return runs[c.ID] }, kube.Options{Series: *series, Namespace: *ns, Image: *img, Nodes: *nodes, Load: plan.Load})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	// The namespace and its admission policy are applied before the
	// Jobs (kubectl apply -f DIR/namespace.yaml, then the rest).
	var pol bytes.Buffer
	if err := kube.WriteYAML(&pol, kube.Policy(*ns)...); err != nil {
		return err
	}
	if err := report.WriteFile(*out, kube.PolicyFile, func(w io.Writer) error { _, err := w.Write(pol.Bytes()); return err }); err != nil {
		return err
	}
	fmt.Printf("%s: namespace %s (Pod Security %s) and its admission policy\n", filepath.Join(*out, kube.PolicyFile), *ns, kube.PodSecurityLevel)
	for _, j := range jobs {
		var b bytes.Buffer
		if err := j.WriteYAML(&b); err != nil {
			return err
		}
		name := j.Job.Name + ".yaml"
		if err := report.WriteFile(*out, name, func(w io.Writer) error { _, err := w.Write(b.Bytes()); return err }); err != nil {
			return err
		}
		fmt.Printf("%s: %d runs, parallelism %d\n", filepath.Join(*out, name), *j.Job.Spec.Completions, *j.Job.Spec.Parallelism)
	}
	return nil
}

func collect(args []string) error {
	fs := flag.NewFlagSet("collect", flag.ContinueOnError)
	profile := fs.String("profile", engine.DefaultProfile, "the LAB_PROFILE the Jobs were rendered from")
	series := fs.String("series", "", "the Jobs' -series")
	dir := fs.String("dir", "", "the new or empty report directory to write")
	allow := fs.Bool("allow-mismatch", false, "collect records from nodes whose machines differ")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" || fs.NArg() == 0 {
		return errors.New("collect: want -dir OUT and the record files (kubectl logs of each pod's client)")
	}
	var recs []engine.Record
	for _, path := range fs.Args() {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 256<<20) // a record holds its sampler's series: megabytes
		for line := 1; sc.Scan(); line++ {
			if len(bytes.TrimSpace(sc.Bytes())) == 0 {
				continue
			}
			var r engine.Record
			dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&r); err != nil {
				f.Close()
				return fmt.Errorf("%s:%d: not a raw record: %w", path, line, err)
			}
			recs = append(recs, r)
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	slices.SortStableFunc(recs, func(a, b engine.Record) int { return a.Run - b.Run })
	return engine.Collect(*dir, *profile, *series, recs, *allow)
}
