// Package podrun is what each container of a Kubernetes run pod does
// (labagent pod <role>): it finds its run in the run table by the Job's
// completion index and plays the part the harness plays over docker exec
// in the lab's own pods. The app and NGINX sidecars start their server;
// the sampler sidecar samples from the client's go to its stop; the
// client waits for the servers, runs the load, collects the app's write
// records, its log and the sampler's series through the pod's shared
// volume, and prints the run's raw record (runrec.Record) on stdout.
package podrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"wsgilab/bench/internal/load"
	"wsgilab/bench/internal/podspec"
)

// Entry is one completion index's run in the run table.
type Entry struct {
	Index     int            `json:"index"`
	Condition string         `json:"condition"`
	Run       int            `json:"run"`
	Pod       podspec.Config `json:"pod"`
	// Load targets the pod's entry point on 127.0.0.1.
	Load load.Spec `json:"load"`
}

// The environment every container of a run pod reads.
const (
	// EnvIndex is set by Kubernetes in every container of an Indexed Job.
	EnvIndex = "JOB_COMPLETION_INDEX"
	// EnvTable is the run table's path, EnvShared the shared volume's,
	// EnvRole the container's role.
	EnvTable  = "LAB_RUN_TABLE"
	EnvShared = "LAB_SHARED"
	EnvRole   = "LAB_ROLE"
	// EnvNode is the node's name (the downward API's spec.nodeName), which
	// the client writes into its record; unset outside Kubernetes.
	EnvNode = "LAB_NODE"
)

// Files in the shared volume.
const (
	// GoFile is created by the client once the servers answer: the
	// sampler starts. StopFile ends the sampling once the load is over.
	GoFile   = "go"
	StopFile = "stop"
	// SeriesFile is the sampler's series, written whole by rename.
	SeriesFile = "sampler.json"
	// WritesFile is the app's write log (LAB_WRITES_LOG), AppLogFile its
	// stdout and stderr.
	WritesFile = "writes.jsonl"
	AppLogFile = "app.log"
	// pidPrefix + role holds the PID of the role's first process, written
	// before it starts its server: how the sampler tells the roles apart
	// (probe.SamplerSpec.RoleRoots).
	pidPrefix = "pid-"
)

// markPID leaves this process's PID as role's in the shared volume; an
// exec keeps it.
func (e Env) markPID(role string) error {
	return e.writeFile(pidPrefix+role, []byte(strconv.Itoa(os.Getpid())))
}

// rolePIDs reads the PIDs the roles left, by PID.
func (e Env) rolePIDs(roles ...string) (map[int]string, error) {
	out := map[int]string{}
	for _, r := range roles {
		b, err := os.ReadFile(e.path(pidPrefix + r))
		if err != nil {
			return nil, fmt.Errorf("podrun: %s left no PID: %w", r, err)
		}
		pid, err := strconv.Atoi(string(b))
		if err != nil {
			return nil, fmt.Errorf("podrun: %s's PID %q: %w", r, b, err)
		}
		out[pid] = r
	}
	return out, nil
}

// Defaults of the in-pod waits.
const (
	// DefaultWait bounds each wait of a role on another (the go file,
	// the sampler's series): a pod whose partner never comes ends in an
	// error, never hangs.
	DefaultWait = 2 * time.Minute
	// poll is how often a wait looks again.
	poll = 10 * time.Millisecond
)

// Env is what a role reads from its environment.
type Env struct {
	Entry  Entry
	Shared string
	// Node is EnvNode: the node the pod runs on.
	Node string
}

// ReadEnv reads the run table named by LAB_RUN_TABLE and picks the entry
// of JOB_COMPLETION_INDEX; getenv is os.Getenv in a pod. Each missing or
// bad value is named with what is wanted.
func ReadEnv(getenv func(string) string) (Env, error) {
	var e Env
	var errs []error
	e.Shared, e.Node = getenv(EnvShared), getenv(EnvNode)
	if e.Shared == "" {
		errs = append(errs, fmt.Errorf("%s is not set: want the pod's shared volume", EnvShared))
	}
	idx, err := strconv.Atoi(getenv(EnvIndex))
	if err != nil || idx < 0 {
		errs = append(errs, fmt.Errorf("%s=%q: want the Indexed Job's completion index, 0 or more", EnvIndex, getenv(EnvIndex)))
	}
	path := getenv(EnvTable)
	b, err := os.ReadFile(path)
	if err != nil {
		errs = append(errs, fmt.Errorf("%s=%q: want the run table: %v", EnvTable, path, err))
	}
	if len(errs) > 0 {
		return e, errors.Join(errs...)
	}
	var table []Entry
	if err := json.Unmarshal(b, &table); err != nil {
		return e, fmt.Errorf("run table %s: %w", path, err)
	}
	if idx >= len(table) || table[idx].Index != idx {
		return e, fmt.Errorf("run table %s has no entry %d (it has %d)", path, idx, len(table))
	}
	e.Entry = table[idx]
	return e, nil
}

// path is name in the shared volume.
func (e Env) path(name string) string { return filepath.Join(e.Shared, name) }

// waitFile waits until name exists in the shared volume, up to wait.
func (e Env) waitFile(ctx context.Context, name string, wait time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	for {
		_, err := os.Stat(e.path(name))
		if err == nil {
			return nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("podrun: no %s within %v", e.path(name), wait)
		case <-time.After(poll):
		}
	}
}

// touch creates name in the shared volume.
func (e Env) touch(name string) error {
	f, err := os.OpenFile(e.path(name), os.O_CREATE|os.O_WRONLY, 0o666)
	if err != nil {
		return err
	}
	return f.Close()
}

// writeFile writes b to name whole: through a temporary file renamed over
// it, so a reader never sees half of it.
func (e Env) writeFile(name string, b []byte) error {
	tmp := e.path("." + name + ".tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, e.path(name))
}
