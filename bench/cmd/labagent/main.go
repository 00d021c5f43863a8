// Command labagent runs inside the lab's client container, in the
// namespace shared with the servers, and reports back as JSON on stdout so
// the harness works against a remote Docker engine too.
//
//	labagent get [-id ID] [-expect-bytes N] URL
//
// fetches URL once over a new connection and prints a getResult; it exits
// 1 unless the status is 200 (and the body has the expected length).
//
//	labagent run SPEC_JSON
//
// performs one run of article A's load (a load.Spec) and prints its
// load.Result: one fresh process per measurement.
//
//	labagent inspect
//
// prints the cgroup limits of the container it runs in and the network
// namespace's sysctls (a probe.Inspection).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"wsgilab/bench/internal/load"
	"wsgilab/bench/internal/probe"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: labagent get [flags] URL")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "get":
		err = runGet(os.Args[2:], os.Stdout)
	case "inspect":
		err = runInspect(os.Stdout)
	case "run":
		err = runLoad(os.Args[2:], os.Stdout)
	default:
		err = fmt.Errorf("unknown command %q (want: get, run, inspect)", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "labagent:", err)
		os.Exit(1)
	}
}

type getResult struct {
	URL     string        `json:"url"`
	Status  int           `json:"status"`
	Bytes   int64         `json:"bytes"`
	Elapsed time.Duration `json:"elapsed_ns"`
	Error   string        `json:"error,omitempty"`
}

func runGet(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("get", flag.ContinueOnError)
	id := fs.String("id", "", "X-Lab-Id header, to match the app's write record")
	expect := fs.Int64("expect-bytes", -1, "fail unless the body has this many bytes (-1: any)")
	timeout := fs.Duration("timeout", 30*time.Second, "whole-request timeout")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("get takes one URL")
	}
	res := getResult{URL: fs.Arg(0)}
	err := get(&res, *id, *timeout)
	if err == nil && res.Status != http.StatusOK {
		err = fmt.Errorf("status %d", res.Status)
	}
	if err == nil && *expect >= 0 && res.Bytes != *expect {
		err = fmt.Errorf("body is %d bytes, want %d", res.Bytes, *expect)
	}
	if err != nil {
		res.Error = err.Error()
	}
	if jerr := json.NewEncoder(stdout).Encode(res); jerr != nil {
		return jerr
	}
	return err
}

func get(res *getResult, id string, timeout time.Duration) error {
	req, err := http.NewRequest(http.MethodGet, res.URL, nil)
	if err != nil {
		return err
	}
	req.Close = true
	if id != "" {
		req.Header.Set("X-Lab-Id", id)
	}
	client := &http.Client{Timeout: timeout, Transport: &http.Transport{DisableKeepAlives: true}}
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	res.Status = resp.StatusCode
	res.Bytes, err = io.Copy(io.Discard, resp.Body)
	res.Elapsed = time.Since(start)
	return err
}

func runInspect(stdout io.Writer) error {
	in, err := probe.Inspect("/sys/fs/cgroup", "/proc")
	if err != nil {
		return err
	}
	return json.NewEncoder(stdout).Encode(in)
}

func runLoad(args []string, stdout io.Writer) error {
	if len(args) != 1 {
		return errors.New("run takes one argument, a load.Spec as JSON")
	}
	var spec load.Spec
	if err := json.Unmarshal([]byte(args[0]), &spec); err != nil {
		return fmt.Errorf("run: spec: %w", err)
	}
	res, err := load.Run(context.Background(), spec)
	if err != nil {
		return err
	}
	return json.NewEncoder(stdout).Encode(res)
}
