package probe

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeTreeProc writes a proc tree of processes: pid -> ppid, comm and
// environment.
func fakeTreeProc(t *testing.T, procs map[int]struct {
	ppid int
	comm string
	env  []string
}) string {
	t.Helper()
	root := t.TempDir()
	for pid, p := range procs {
		dir := filepath.Join(root, fmt.Sprint(pid))
		require.NoError(t, os.MkdirAll(dir, 0o755))
		stat := fmt.Sprintf("%d (%s) S %d 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 100 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n", pid, p.comm, p.ppid)
		for name, body := range map[string]string{"stat": stat, "comm": p.comm + "\n", "cmdline": p.comm + "\x00",
			"environ": strings.Join(p.env, "\x00") + "\x00"} {
			require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644))
		}
	}
	return root
}

// TestRolesByRoots: with RoleRoots, a process's role is its nearest
// listed ancestor's (or its own), among the spec's roles; workers are the
// processes whose parent has their role; a process of another role (the
// sampler) or none (the pause container, a stray shell) is left out.
func TestRolesByRoots(t *testing.T) {
	type p = struct {
		ppid int
		comm string
		env  []string
	}
	root := fakeTreeProc(t, map[int]p{
		1:  {0, "pause", nil},
		7:  {1, "gunicorn", []string{"PATH=/bin", "LAB_ROLE=app"}},
		8:  {7, "gunicorn", []string{"LAB_ROLE=app"}},
		9:  {7, "gunicorn", []string{"LAB_ROLE=app"}},
		12: {1, "nginx", []string{"LAB_ROLE=proxy"}},
		13: {12, "nginx", []string{"LAB_ROLE=proxy"}},
		20: {1, "labagent", []string{"LAB_ROLE=sampler"}},
		30: {1, "labagent", []string{"LAB_ROLE=client"}},
		40: {1, "sh", nil},
	})
	got, err := rolesOf(SamplerSpec{ProcRoot: root, Containers: map[string]string{"app": "", "proxy": "", "client": ""},
		RoleRoots: map[int]string{7: "app", 12: "proxy", 20: "sampler", 30: "client"}})
	require.NoError(t, err)
	type rw struct {
		role   string
		worker bool
	}
	byPID := map[int]rw{}
	for _, pi := range got {
		byPID[pi.PID] = rw{pi.Role, pi.Worker}
	}
	assert.Equal(t, map[int]rw{7: {"app", false}, 8: {"app", true}, 9: {"app", true}, 12: {"proxy", false}, 13: {"proxy", true},
		30: {"client", false}}, byPID)
}

// A single-process server (Uvicorn without --workers, waitress) serves in
// its one process: that process is the app's worker, and the run gets a
// verdict. A master is never one, nor is a client, and a master stays a
// master when a listing catches it between two workers.
func TestSingleProcessServerIsItsWorker(t *testing.T) {
	type p = struct {
		ppid int
		comm string
		env  []string
	}
	root := fakeTreeProc(t, map[int]p{
		1:  {0, "pause", nil},
		7:  {1, "uvicorn", nil},
		12: {1, "nginx", nil},
		13: {12, "nginx", nil},
		30: {1, "labagent", nil},
	})
	spec := SamplerSpec{ProcRoot: root, Containers: map[string]string{"app": "", "proxy": "", "client": ""},
		RoleRoots: map[int]string{7: "app", 12: "proxy", 30: "client"}}
	got, err := rolesOf(spec)
	require.NoError(t, err)
	workers := map[int]bool{}
	for _, pi := range got {
		workers[pi.PID] = pi.Worker
	}
	assert.Equal(t, map[int]bool{7: true, 12: false, 13: true, 30: false}, workers)

	// The same app as a master with a worker, then caught with none.
	master := []ProcessInfo{{Process: Process{PID: 7, PPID: 1}, Role: "app", Master: true}, {Process: Process{PID: 8, PPID: 7}, Role: "app", Worker: true}}
	alone := []ProcessInfo{{Process: Process{PID: 7, PPID: 1}, Role: "app", Worker: true}}
	merged := mergeProcesses(master, alone)
	require.Len(t, merged, 2)
	assert.Equal(t, 7, merged[0].PID)
	assert.True(t, merged[0].Master)
	assert.False(t, merged[0].Worker, "a master caught between workers is still no worker")
	assert.True(t, merged[1].gone)
}
