// Command labagent runs inside the lab's client container, in the
// namespace shared with the servers, and reports back as JSON on stdout so
// the harness works against a remote Docker engine too.
//
//	labagent get [-id ID] [-expect-bytes N] [-status S] [-retry D] [-ca PEM] [-ws] URL
//
// fetches URL over a new connection and prints a getResult; it exits 1
// unless the status is 200 (or S, and the body has the expected length).
// With -retry it tries again every 10 ms until an answer passes or D has
// passed, and prints the last try: a readiness check in one exec. With
// -ws it asks a ws:// URL for its WebSocket Upgrade instead (S 101: a
// stack's WebSocket check).
//
//	labagent run [-inspect] SPEC_JSON
//
// performs one run of article A's load (a load.Spec) and prints its
// load.Result: one fresh process per measurement. With -inspect it then
// reads what inspect reads and prints both (a runrec.Measured): a run's
// one exec into the client instead of two.
//
//	labagent closed SPEC_JSON
//	labagent ab SPEC_JSON
//
// run article B's closed-loop load (a load.ClosedSpec) with our generator,
// or with Apache Bench (ab -r), and print a load.ClosedResult; for ab the
// CPU time is the ab process's own.
//
//	labagent probe SPEC_JSON
//
// samples the pod's processes, sockets, temp files and cgroups (a
// probe.SamplerSpec) until the spec's stop file appears, and prints the
// probe.Series. It runs in its own container, outside the measured budgets.
//
//	labagent inspect
//
// prints the cgroup limits of the container it runs in and the network
// namespace's sysctls (a probe.Inspection).
//
//	labagent pod app|proxy|sampler|client
//	labagent pod ready app|proxy
//
// plays a role in a Kubernetes run pod (package podrun): it reads the
// run table ($LAB_RUN_TABLE) at $JOB_COMPLETION_INDEX; the client prints
// the run's raw record (runrec.Record). `pod ready` is the sidecars'
// startup probe.
//
//	labagent hop
//
// relays the Toxiproxy hops that $LAB_HOPS gives (a JSON array of
// toxic.Hop, package toxic/hop) until SIGTERM: the pod's hop container.
package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"syscall"
	"time"

	"wsgilab/bench/internal/load"
	"wsgilab/bench/internal/podrun"
	"wsgilab/bench/internal/probe"
	"wsgilab/bench/internal/runrec"
	"wsgilab/bench/internal/toxic"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: labagent get [flags] URL")
		os.Exit(2)
	}
	// LABAGENT_CPUPROFILE names a file for a pprof CPU profile of this
	// command, to see what sampling or load generation costs.
	if path := os.Getenv("LABAGENT_CPUPROFILE"); path != "" {
		f, err := os.Create(path)
		if err == nil {
			pprof.StartCPUProfile(f)
			defer pprof.StopCPUProfile()
		}
	}
	var err error
	switch os.Args[1] {
	case "get":
		err = runGet(os.Args[2:], os.Stdout)
	case "inspect":
		err = runInspect(os.Stdout)
	case "run":
		err = runLoad(os.Args[2:], os.Stdout)
	case "warm":
		err = runWarm(os.Args[2:])
	case "probe":
		err = runProbe(os.Args[2:], os.Stdout)
	case "closed":
		err = runClosed(os.Args[2:], os.Stdout, false)
	case "ab":
		err = runClosed(os.Args[2:], os.Stdout, true)
	case "pod":
		err = runPod(os.Args[2:], os.Stdout)
	case "hop":
		err = runHop(os.Getenv(toxic.HopsEnv))
	default:
		err = fmt.Errorf("unknown command %q (want: get, run, warm, closed, ab, probe, inspect, pod, hop)", os.Args[1])
	}
	if err != nil {
		pprof.StopCPUProfile()
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
	status := fs.Int("status", http.StatusOK, "fail unless the answer has this status")
	retry := fs.Duration("retry", 0, "try again every 10ms until an answer passes or this long has passed (0: once)")
	caPEM := fs.String("ca", "", "an https URL's only trusted certificate, PEM (the pod's CA)")
	h2c := fs.Bool("h2c", false, "speak HTTP/2 by prior knowledge to an http URL (an entry point that takes HTTP/2 only: NGINX's h2c listener)")
	ws := fs.Bool("ws", false, "ask a ws:// or wss:// URL for its WebSocket Upgrade instead, and close it normally if it opened (-status 101 passes a path that takes WebSockets)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("get takes one URL")
	}
	if *h2c && *ws {
		return errors.New("get: -h2c with -ws: a WebSocket Upgrade is an HTTP/1.1 request, which an h2c-only listener does not take")
	}
	tr := &http.Transport{DisableKeepAlives: true}
	if *caPEM != "" {
		c, err := load.TrustOnly(*caPEM)
		if err != nil {
			return fmt.Errorf("get: -ca %w", err)
		}
		tr.TLSClientConfig = c
	}
	var rt http.RoundTripper = tr
	if *h2c {
		rt = load.H2CTransport()
	}
	var res getResult
	var err error
	for end := time.Now().Add(*retry); ; time.Sleep(getRetryEvery) {
		res = getResult{URL: fs.Arg(0)}
		if *ws {
			err = handshake(&res, *timeout, tr.TLSClientConfig)
		} else {
			err = get(&res, *id, *timeout, rt)
		}
		if err == nil && res.Status != *status {
			err = fmt.Errorf("status %d, want %d", res.Status, *status)
		}
		if err == nil && *expect >= 0 && res.Bytes != *expect {
			err = fmt.Errorf("body is %d bytes, want %d", res.Bytes, *expect)
		}
		if err == nil || !time.Now().Add(getRetryEvery).Before(end) {
			break
		}
	}
	if err != nil {
		res.Error = err.Error()
	}
	if jerr := json.NewEncoder(stdout).Encode(res); jerr != nil {
		return jerr
	}
	return err
}

// getRetryEvery is get -retry's interval.
const getRetryEvery = 10 * time.Millisecond

func get(res *getResult, id string, timeout time.Duration, tr http.RoundTripper) error {
	req, err := http.NewRequest(http.MethodGet, res.URL, nil)
	if err != nil {
		return err
	}
	req.Close = true
	if id != "" {
		req.Header.Set("X-Lab-Id", id)
	}
	client := &http.Client{Timeout: timeout, Transport: tr}
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

// handshake asks res.URL for its WebSocket Upgrade (load.Handshake).
func handshake(res *getResult, timeout time.Duration, tc *tls.Config) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	start := time.Now()
	var err error
	res.Status, err = load.Handshake(ctx, res.URL, tc)
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

// runWarm makes a load.Warm's requests (its one argument, as JSON): run
// before the sampler starts, so that what the server opens on first use
// is in the count before the load.
func runWarm(args []string) error {
	if len(args) != 1 {
		return errors.New("warm takes one argument, a load.Warm as JSON")
	}
	var w load.Warm
	if err := json.Unmarshal([]byte(args[0]), &w); err != nil {
		return fmt.Errorf("warm: %w", err)
	}
	return load.RunWarm(context.Background(), w)
}

func runLoad(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	withInspection := fs.Bool("inspect", false, "once the load has ended, read the container's limits and the namespace's sysctls, and print them with the result (runrec.Measured)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("run takes one argument, a load.Spec as JSON")
	}
	var spec load.Spec
	if err := json.Unmarshal([]byte(fs.Arg(0)), &spec); err != nil {
		return fmt.Errorf("run: spec: %w", err)
	}
	quietGC()
	res, err := load.Run(context.Background(), spec)
	if err != nil {
		return err
	}
	collectBeforeEncoding()
	if *withInspection {
		// Read once the load has ended, as a separate inspect did: its
		// OOM kills are the run's, and its CPU falls outside the window.
		in, err := probe.Inspect("/sys/fs/cgroup", "/proc")
		if err != nil {
			return fmt.Errorf("run: inspect: %w", err)
		}
		return json.NewEncoder(stdout).Encode(runrec.Measured{Load: res, Client: in})
	}
	return json.NewEncoder(stdout).Encode(res)
}

// quietGC turns the collector off for a run or a probe. A run collected
// once, 6.6 to 8.5 s in, as the download records grew: 0.45 ms of CPU
// from the client's 0.2-core quota, and request 51 (6.6 s in) was the
// worst of its run in 4 of 50 runs of article A, in none with the
// collector off. A probe's cycles are CPU of the sampler's own cost.
// Either allocates a few MiB, so the collector runs only if the heap
// nears half the container's memory limit (debug.SetMemoryLimit), or
// defaultGCLimit where none is read.
func quietGC() {
	limit := int64(defaultGCLimit)
	if l, err := probe.ReadLimits("/sys/fs/cgroup"); err == nil && l.MemoryBytes > 0 {
		limit = l.MemoryBytes / 2
	}
	debug.SetMemoryLimit(limit)
	debug.SetGCPercent(-1)
}

const defaultGCLimit = 64 << 20

// collectBeforeEncoding runs the collection quietGC held back, once the
// measurement is over: the heap it let grow to half the container's limit
// is mostly garbage, and the record's encoding must not add itself on top
// (a sampler of 10,000 held connections was OOM-killed there, with one P
// whose collector may take only half of it).
func collectBeforeEncoding() { debug.FreeOSMemory() }

func runProbe(args []string, stdout io.Writer) error {
	if len(args) != 1 {
		return errors.New("probe takes one argument, a probe.SamplerSpec as JSON")
	}
	var spec probe.SamplerSpec
	if err := json.Unmarshal([]byte(args[0]), &spec); err != nil {
		return fmt.Errorf("probe: spec: %w", err)
	}
	quietGC()
	// One P: the sampler is one loop, and a second P only adds wake-ups
	// between threads to its cost.
	runtime.GOMAXPROCS(1)
	series, err := probe.Sample(context.Background(), spec)
	if err != nil {
		return err
	}
	collectBeforeEncoding()
	return json.NewEncoder(stdout).Encode(series)
}

func runClosed(args []string, stdout io.Writer, ab bool) error {
	if len(args) != 1 {
		return errors.New("closed and ab take one argument, a load.ClosedSpec as JSON")
	}
	var spec load.ClosedSpec
	if err := json.Unmarshal([]byte(args[0]), &spec); err != nil {
		return fmt.Errorf("spec: %w", err)
	}
	if err := spec.Validate(); err != nil {
		return err
	}
	var res load.ClosedResult
	var err error
	if ab {
		res, err = runAB(spec)
	} else {
		// One P, like ab's one thread: the loop is all syscalls, and a
		// second P only adds wake-ups between threads, CPU the 2-core
		// machine's server then lacks.
		runtime.GOMAXPROCS(1)
		res, err = load.Closed(context.Background(), spec)
	}
	if err != nil {
		return err
	}
	return json.NewEncoder(stdout).Encode(res)
}

// runAB runs Apache Bench as a child and takes its CPU time from the
// child's rusage.
func runAB(spec load.ClosedSpec) (load.ClosedResult, error) {
	cmd := exec.Command("ab", "-r", "-n", strconv.Itoa(spec.N), "-c", strconv.Itoa(spec.C),
		"-s", strconv.Itoa(int(spec.Timeout.Seconds())), spec.URL)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return load.ClosedResult{}, fmt.Errorf("ab: %w\n%s", err, out.String())
	}
	res, err := load.ParseAB(spec, out.String())
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		res.CPU = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return res, err
}

// runPod plays a role of a Kubernetes run pod (package podrun).
func runPod(args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New("pod takes a role: app, proxy, sampler, client, or ready app|proxy")
	}
	e, err := podrun.ReadEnv(os.Getenv)
	if err != nil {
		return err
	}
	switch args[0] {
	case "app":
		return podrun.App(e)
	case "proxy":
		return podrun.Proxy(e)
	case "ready":
		if len(args) != 2 || (args[1] != "app" && args[1] != "proxy") {
			return errors.New("pod ready takes app or proxy")
		}
		return podrun.Ready(e, args[1])
	case "sampler":
		quietGC()
		runtime.GOMAXPROCS(1) // as labagent probe
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		defer stop()
		if err := podrun.Sampler(ctx, e, probe.DefaultInterval); err != nil {
			return err
		}
		// A native sidecar that exits is restarted: it waits for the
		// pod's end instead.
		<-ctx.Done()
		return nil
	case "client":
		quietGC()
		return podrun.Client(context.Background(), e, stdout)
	}
	return fmt.Errorf("pod: unknown role %q (want: app, proxy, sampler, client, ready)", args[0])
}
