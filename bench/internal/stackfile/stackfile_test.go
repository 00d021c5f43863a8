package stackfile

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const stacks = "../../../fixtures/stacks"

// Every example stack file loads: the shop app's, the NGINX, HAProxy and
// Caddy ones and the worked examples' (one directory each, the leaky
// reports app's among them).
func TestExamplesLoad(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(stacks, "*.yaml"))
	require.NoError(t, err)
	require.Len(t, files, 9)
	worked, err := filepath.Glob(filepath.Join(stacks, "*", "stack.yaml"))
	require.NoError(t, err)
	require.Len(t, worked, 5)
	for _, f := range append(files, worked...) {
		t.Run(strings.TrimPrefix(f, stacks+"/"), func(t *testing.T) {
			s, err := Load(f)
			require.NoError(t, err)
			assert.NotEmpty(t, s.Source)
		})
	}
}

// Each bad stack file in fixtures/stacks/bad is refused, before anything
// starts, with the error its first line names ("# want: ..."): the
// field, the value and what is accepted.
func TestBadFilesRefused(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(stacks, "bad", "*.yaml"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(files), 10)
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".yaml"), func(t *testing.T) {
			want := firstLineWant(t, f)
			_, err := Load(f)
			require.Error(t, err)
			assert.Contains(t, err.Error(), want)
			assert.Contains(t, err.Error(), f, "the error names the file")
		})
	}
}

func firstLineWant(t *testing.T, path string) string {
	fh, err := os.Open(path)
	require.NoError(t, err)
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	require.True(t, sc.Scan())
	want, ok := strings.CutPrefix(sc.Text(), "# want: ")
	require.True(t, ok, "%s: the first line says what error it wants", path)
	return want
}

// Every problem of a file is named at once, one per line.
func TestAllProblemsAtOnce(t *testing.T) {
	_, err := Parse([]byte(`
name: x
app: {dir: shop, module: shop:app, server: [gunicorn]}
proxy: {mode: buffering-on}
paths: {fast: {path: /healthz, status: 302}}
limits: {app: {cpus: 0.01, memory_mib: 4}}
requires: {silent_connections: 2, fast_p95_ms: -1}
`), stacks)
	require.Error(t, err)
	for _, want := range []string{"paths.fast.status 302", "limits.app.cpus 0.01", "limits.app.memory_mib 4", "requires.fast_p95_ms -1"} {
		assert.Contains(t, err.Error(), want)
	}
	assert.Equal(t, 4, strings.Count(err.Error(), "\n")+1)
}

func TestReadServer(t *testing.T) {
	for _, tc := range []struct {
		cmd      []string
		describe string
		capacity int
	}{
		{[]string{"gunicorn", "--workers", "2"}, "2 sync workers", 2},
		{[]string{"gunicorn"}, "1 sync worker", 1},
		{[]string{"gunicorn", "-w", "1", "--threads", "4"}, "1 gthread worker x 4 threads", 4},
		{[]string{"python3", "-m", "gunicorn", "--workers=3", "-k", "gthread", "--threads=2", "app:app"}, "3 gthread workers x 2 threads", 6},
		{[]string{"gunicorn", "-k", "gevent", "-w", "2"}, "2 gevent workers", 0},
		{[]string{"gunicorn", "--worker-class", "uvicorn.workers.UvicornWorker"}, "1 uvicorn worker", 0},
		{[]string{"uwsgi", "--processes", "2"}, "uWSGI, 2 sync processes", 2},
		{[]string{"uwsgi", "-p", "2", "--threads", "8"}, "uWSGI, 2 processes x 8 threads", 16},
		{[]string{"uwsgi", "--processes", "2", "--gevent", "100"}, "uWSGI, 2 gevent processes", 200},
		{[]string{"uvicorn", "--workers", "4"}, "Uvicorn, 4 workers", 0},
		{[]string{"uvicorn", "--limit-concurrency", "10"}, "Uvicorn, 1 worker", 10},
		{[]string{"./serve.sh"}, "the server", 0},
	} {
		s := ReadServer(tc.cmd)
		assert.Equal(t, tc.describe, s.Describe(), "%q", tc.cmd)
		assert.Equal(t, tc.capacity, s.Capacity, "%q", tc.cmd)
		assert.NotEmpty(t, s.Basis, "%q", tc.cmd)
	}
}

// The lab binds the server and names the app itself.
func TestAppCommand(t *testing.T) {
	a := App{Module: "shop:app", Server: []string{"gunicorn", "--workers", "2"}}
	assert.Equal(t, []string{"python3", "-m", "gunicorn", "--bind", "127.0.0.1:8000", "--workers", "2", "shop:app"}, a.Command(8000))
	a.Server = []string{"uvicorn", "--workers", "2"}
	assert.Equal(t, []string{"python3", "-m", "uvicorn", "--host", "127.0.0.1", "--port", "8000", "--workers", "2", "shop:app"}, a.Command(8000))
	a.Server = []string{"uwsgi", "--processes", "2"}
	assert.Equal(t, []string{"uwsgi", "--plugin", "python311", "--http-socket", "127.0.0.1:8000", "--pythonpath", AppRoot,
		"--module", "shop:app", "--need-app", "--die-on-term", "--processes", "2"}, a.Command(8000))
}

// A team's image never runs as root: only numeric ids above 0.
func TestNonRoot(t *testing.T) {
	for user, ok := range map[string]bool{"1000": true, "1000:1000": true, "65534:65534": true,
		"0": false, "00": false, "000:1000": false, "1000:0": false, "root": false, "admin": false, "": false, "1000:": false} {
		assert.Equal(t, ok, nonRoot(user), "%q", user)
	}
}

// A server's counts are bounded by what the app container boots: each bad
// value is refused naming the field and the flag, and the bounds follow
// the memory limit the file sets.
func TestServerCountsBounded(t *testing.T) {
	for _, tc := range []struct {
		server []string
		memMiB int
		want   string // "" is valid
	}{
		{[]string{"gunicorn", "--workers", "2"}, 128, ""},
		{[]string{"gunicorn", "--workers", "31"}, 128, ""},
		{[]string{"gunicorn", "--workers", "32"}, 128, `app.server "--workers 32": want a whole number from 1 to 31 (processes: 128 MiB of memory and 256 pids boot at most 31, the first in 36 MiB with its master, each more in 3 MiB and 2 pids)`},
		{[]string{"gunicorn", "--workers", "2"}, 36, `app.server "--workers 2": want a whole number from 1 to 1`},
		{[]string{"gunicorn", "--workers", "2"}, 39, ""},
		{[]string{"gunicorn", "--workers", "1000000"}, 4096, `app.server "--workers 1000000": want a whole number from 1 to 120`},
		{[]string{"gunicorn", "-w0"}, 128, `app.server "-w 0": want a whole number from 1 to 31`},
		{[]string{"gunicorn", "--workers=two"}, 128, `app.server "--workers two"`},
		{[]string{"gunicorn", "--threads", "-4"}, 128, `app.server "--threads -4": want a whole number from 1 to 238 (threads per process: 1 process(es) within the app's limit of 256 pids)`},
		{[]string{"gunicorn", "--workers", "2", "--threads", "118"}, 128, ""},
		{[]string{"gunicorn", "--workers", "2", "--threads", "119"}, 128, `app.server "--threads 119": want a whole number from 1 to 118`},
		{[]string{"gunicorn", "-k", "gevent", "--worker-connections", "100000"}, 128, `app.server "--worker-connections 100000": want a whole number from 1 to 10000 (per process)`},
		{[]string{"uwsgi", "--processes", "0"}, 128, `app.server "--processes 0"`},
		{[]string{"uwsgi", "--processes", "2", "--offload-threads", "0"}, 128, ""},
		{[]string{"uwsgi", "--async", "100", "--ugreen"}, 128, ""},
		{[]string{"uvicorn", "--workers", "-1"}, 128, `app.server "--workers -1"`},
	} {
		iface := "wsgi"
		if tc.server[0] == "uvicorn" {
			iface = "asgi"
		}
		doc := fmt.Sprintf("name: x\napp: {dir: shop, module: shop:app, interface: %s, server: %s}\npaths: {fast: {path: /healthz}}\nlimits: {app: {cpus: 0.25, memory_mib: %d}}\nrequires: {silent_connections: 1}\n",
			iface, flowSeq(tc.server), tc.memMiB)
		_, err := Parse([]byte(doc), stacks)
		if tc.want == "" {
			assert.NoError(t, err, "%q", tc.server)
			continue
		}
		if assert.Error(t, err, "%q", tc.server) {
			assert.Contains(t, err.Error(), tc.want, "%q", tc.server)
		}
	}
	// The app's environment cannot change what the command says.
	_, err := Parse([]byte("name: x\napp: {dir: shop, module: shop:app, server: [gunicorn], env: {GUNICORN_CMD_ARGS: --workers 64, UVICORN_WORKERS: \"8\"}}\npaths: {fast: {path: /healthz}}\nrequires: {silent_connections: 1}\n"), stacks)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `app.env "GUNICORN_CMD_ARGS": want none of GUNICORN_CMD_ARGS, WEB_CONCURRENCY, UVICORN_*, UWSGI_*`)
	assert.Contains(t, err.Error(), `app.env "UVICORN_WORKERS"`)
}

// flowSeq is a YAML flow sequence of quoted strings.
func flowSeq(xs []string) string {
	var q []string
	for _, x := range xs {
		q = append(q, strconv.Quote(x))
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// Past 15 the steps double, the requirement is a step of its own and the
// last is the next doubling past it, within the step limit.
func TestSteps(t *testing.T) {
	seq := func(n int) []int {
		var s []int
		for i := 1; i <= n; i++ {
			s = append(s, i)
		}
		return s
	}
	assert.Empty(t, Steps(0, ReaderStepLimit))
	assert.Equal(t, []int{1, 2, 3}, Steps(2, ReaderStepLimit))
	assert.Equal(t, seq(16), Steps(15, ReaderStepLimit), "15 steps to 16 as before")
	assert.Equal(t, append(seq(16), 32), Steps(16, ReaderStepLimit))
	assert.Equal(t, append(seq(16), 32, 64, 128, 256, 300, 512), Steps(300, ReaderStepLimit))
	assert.Equal(t, append(seq(16), 32, 64, 128, 256, 512, 1000, 1024), Steps(MaxSlowReaders, ReaderStepLimit))
	assert.Equal(t, 8192, LastStep(MaxHeldClients, HeldStepLimit))
	assert.Equal(t, 1024, LastStep(MaxSlowReaders, ReaderStepLimit))
}

// Hundreds of slow readers are accepted when they read slowly enough.
func TestHundredsOfSlowReaders(t *testing.T) {
	f, err := Parse([]byte(`
name: x
app: {dir: shop, module: shop:app, server: [gunicorn]}
paths: {fast: {path: /healthz}, large: {path: /export, bytes: 1048576}}
requires: {slow_readers: 300, slow_read_kib_s: 32, silent_connections: 5000}
`), stacks)
	require.NoError(t, err)
	assert.Equal(t, 32, f.Requires.ReadKiBs())
	assert.Equal(t, 2048, Requires{}.ReadKiBs(), "article A's 2 MiB/s by default")
}
