package podrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"wsgilab/bench/internal/load"
	"wsgilab/bench/internal/podspec"
	"wsgilab/bench/internal/probe"
	"wsgilab/bench/internal/runrec"
	"wsgilab/wsgiapp"
)

// App becomes the run's server (syscall.Exec, so the server is the
// container's process and the sampler sees no parent of its role), in the
// app directory, its stdout and stderr in the shared app log and its write
// log in the shared volume. It returns only on failure.
func App(e Env) error {
	s := e.Entry.Pod.Server
	if s.Image != "" || len(s.Cmd) == 0 {
		return fmt.Errorf("podrun: %s's server %q runs its own image (%q): a run pod runs the lab image's servers only", e.Entry.Condition, s.ID, s.Image)
	}
	bin, err := exec.LookPath(s.Cmd[0])
	if err != nil {
		return fmt.Errorf("podrun: server %q: %w", s.ID, err)
	}
	log, err := os.OpenFile(e.path(AppLogFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	for _, fd := range []int{1, 2} {
		if err := unix.Dup3(int(log.Fd()), fd, 0); err != nil { // Dup2 is not on every GOARCH (arm64)
			return fmt.Errorf("podrun: app log: %w", err)
		}
	}
	if err := os.Chdir(wsgiapp.Dir); err != nil {
		return err
	}
	if err := e.markPID(podspec.RoleApp); err != nil {
		return err
	}
	env := append(os.Environ(), "LAB_WRITES_LOG="+e.path(WritesFile), "PYTHONUNBUFFERED=1")
	return syscall.Exec(bin, s.Cmd, append(env, s.Env...))
}

// Proxy becomes the pod's front door on the run's rendered config. It
// returns only on failure.
func Proxy(e Env) error {
	p := e.Entry.Pod.Proxy
	if p == nil {
		return fmt.Errorf("podrun: %s runs direct: its pod has no proxy", e.Entry.Condition)
	}
	d, err := p.Door()
	if err != nil {
		return err
	}
	conf, err := p.Render()
	if err != nil {
		return err
	}
	if err := os.WriteFile(d.ConfPath(), []byte(conf), 0o644); err != nil {
		return err
	}
	for _, dir := range d.Dirs(*p) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	argv := d.Run(*p, d.ConfPath())
	bin, err := exec.LookPath(argv[0])
	if err != nil {
		return err
	}
	if err := e.markPID(podspec.RoleProxy); err != nil {
		return err
	}
	// The door's own variables come first: a program takes the first of
	// a repeated name, and the door's must win (Caddy's HOME), as they do
	// under Docker.
	return syscall.Exec(bin, argv, append(d.Env(), os.Environ()...))
}

// Ready asks role (app, or proxy: the pod's entry point) once for the
// server's ready path: nil when it answers the ready status. It is the
// startup probe that holds the next sidecar.
func Ready(e Env, role string) error {
	path, status := e.Entry.Pod.Server.Ready()
	u := e.Entry.Pod.AppURL(path)
	if role == podspec.RoleProxy {
		return get(e.Entry.Pod.URL(path), status, 2*time.Second, e.Entry.Pod.H2C())
	}
	return get(u, status, 2*time.Second, false)
}

// get GETs u once: over h2c by prior knowledge when h2c (an entry point
// that takes HTTP/2 only, podspec.Config.H2C), else over HTTP/1.1.
func get(u string, status int, timeout time.Duration, h2c bool) error {
	var rt http.RoundTripper = &http.Transport{DisableKeepAlives: true}
	if h2c {
		rt = load.H2CTransport()
	}
	c := &http.Client{Timeout: timeout, Transport: rt}
	resp, err := c.Get(u)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != status {
		return fmt.Errorf("%s: status %d, want %d", u, resp.StatusCode, status)
	}
	return nil
}

// SamplerSpec is the sampler's spec for pod: every role's processes, the
// app's and NGINX's ports and NGINX's temp path, sampled every interval
// until stop exists, announced on ready (probe.SamplerSpec.ReadyAddr).
// The roles' container IDs are left for the caller (stack); a run pod's
// sampler names each role's first process instead (RoleRoots, from the PID
// files the roles leave).
func SamplerSpec(pod podspec.Config, interval time.Duration, stop, ready string) probe.SamplerSpec {
	spec := probe.SamplerSpec{
		Interval: interval, ProcRoot: "/proc", AppPort: pod.Server.ListenPort(), StopFile: stop, ReadyAddr: ready,
		Containers: map[string]string{podspec.RoleApp: "", podspec.RoleClient: ""},
	}
	if pod.Proxy != nil {
		spec.Containers[podspec.RoleProxy] = ""
		if d, err := pod.Proxy.Door(); err == nil {
			spec.TempDir = d.SpillDir(*pod.Proxy)
		}
		spec.ProxyPort = pod.Proxy.Port()
	}
	return spec
}

// ReadyAddr is where a run pod's sampler listens once it has sampled.
const ReadyAddr = "@wsgilab-sampler"

// sampled is SeriesFile: the sampler's series, or why there is none.
type sampled struct {
	Series *probe.Series `json:"series,omitempty"`
	Error  string        `json:"error,omitempty"`
}

// Sampler waits for the client's go, samples the pod every interval
// until the client's stop, and leaves the series (or its error) in the
// shared volume for the client.
func Sampler(ctx context.Context, e Env, interval time.Duration) error {
	if err := e.waitFile(ctx, GoFile, DefaultWait); err != nil {
		return err
	}
	spec := SamplerSpec(e.Entry.Pod, interval, e.path(StopFile), ReadyAddr)
	roles := slices.Sorted(maps.Keys(spec.Containers))
	var err error
	if spec.RoleRoots, err = e.rolePIDs(roles...); err != nil {
		return err
	}
	series, err := probe.Sample(ctx, spec)
	out := sampled{Series: &series}
	if err != nil {
		out = sampled{Error: err.Error()}
	}
	b, jerr := json.Marshal(out)
	if jerr != nil {
		return jerr
	}
	return errors.Join(err, e.writeFile(SeriesFile, b))
}

// Client carries out the run: it waits for the pod's entry point, warms
// what the load asks it to (load.Spec.Warm), reads its own limits and the
// namespace's sysctls, starts the sampler, runs
// the load once the sampler has sampled, stops the sampler and prints the
// run's raw record, with the app's write records, its log and the
// sampler's series, on stdout.
func Client(ctx context.Context, e Env, stdout io.Writer) error {
	en := e.Entry
	rec := runrec.Record{Condition: en.Condition, Run: en.Run, Pod: en.Pod, Started: time.Now()}
	rec.PodOpened = rec.Started
	path, status := en.Pod.Server.Ready()
	if err := retry(ctx, en.Pod.ReadyWait, func() error { return get(en.Pod.URL(path), status, 2*time.Second, en.Pod.H2C()) }); err != nil {
		return fmt.Errorf("podrun: the pod's servers never answered: %w", err)
	}
	if w := en.Load.Warm; w != nil { // before the sampler, whose count before the load it is in
		if err := load.RunWarm(ctx, *w); err != nil {
			return fmt.Errorf("podrun: %w", err)
		}
	}
	rec.Phases.PodS = time.Since(rec.Started).Seconds()
	if err := e.markPID(podspec.RoleClient); err != nil {
		return err
	}
	var err error
	if rec.Client, err = probe.Inspect("/sys/fs/cgroup", "/proc"); err != nil {
		return err
	}
	rec.Client.Node.Name = e.Node
	mark := time.Now()
	if err := e.touch(GoFile); err != nil {
		return err
	}
	spec := en.Load
	spec.After = ReadyAddr
	rec.Load, err = load.Run(ctx, spec)
	stopErr := e.touch(StopFile)
	if err != nil || stopErr != nil {
		return errors.Join(err, stopErr)
	}
	loadStart := time.Unix(0, rec.Load.StartUnixNano)
	rec.Phases.LoadStartS = loadStart.Sub(mark).Seconds()
	mark = loadStart.Add(rec.Load.Elapsed)

	if err := e.waitFile(ctx, SeriesFile, DefaultWait); err != nil {
		return err
	}
	var s sampled
	if b, err := os.ReadFile(e.path(SeriesFile)); err != nil {
		return err
	} else if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("podrun: %s: %w", SeriesFile, err)
	}
	if s.Error != "" {
		return fmt.Errorf("podrun: sampler: %s", s.Error)
	}
	rec.Sampler = s.Series
	writes, err := os.ReadFile(e.path(WritesFile))
	if err != nil && !errors.Is(err, os.ErrNotExist) { // no write log: no download asked for one
		return err
	}
	if rec.Writes, err = runrec.ParseWrites(writes); err != nil {
		return err
	}
	if log, err := os.ReadFile(e.path(AppLogFile)); err != nil {
		rec.AppLogError = err.Error()
	} else {
		rec.AppLog = lastLines(string(log), runrec.MaxLogLines)
	}
	rec.Phases.CollectS = time.Since(mark).Seconds()
	rec.WallS = time.Since(rec.Started).Seconds()
	return json.NewEncoder(stdout).Encode(rec)
}

// retry calls f every poll until it succeeds or wait has passed.
func retry(ctx context.Context, wait time.Duration, f func() error) error {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	for {
		err := f()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(poll):
		}
	}
}

func lastLines(s string, n int) string {
	lines := strings.SplitAfter(s, "\n")
	if len(lines) > n+1 {
		lines = lines[len(lines)-n-1:]
	}
	return strings.Join(lines, "")
}
