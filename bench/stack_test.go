package bench

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"wsgilab/bench/internal/engine"
	"wsgilab/bench/internal/image"
	"wsgilab/bench/internal/report"
	"wsgilab/bench/internal/stack"
	"wsgilab/bench/internal/stackfile"
	"wsgilab/bench/internal/verdict"
)

// exampleStacks are fixtures/stacks' stack files and the verdict each must
// get, behaviour by behaviour (report.StackBehaviour.Text); subtests are
// named by id. Those marked full run under the full profile only (make
// repro): make test keeps its budget with one stack meant to fail (sync)
// and the worked examples of fixtures/stacks/README.md: a Flask app, a
// Django project behind NGINX and a FastAPI app under single-process
// Uvicorn. Sync behind HAProxy at its defaults runs under full only: make
// test asserts the same stall behind HAProxy in the matrix
// (gunicorn-sync-2-behind-haproxy), and Django's example runs a stack
// behind a front door; it cost 73 to 83 s a make test.
var exampleStacks = []struct {
	id, file string
	pass     bool
	texts    []string
	full     bool
	// stalled are the columns whose first broken step must stall:
	// each sound run's p95 past the matrix's stall line
	// (verdict.StalledMs), not only past the stack's bound. Sync's slow
	// TLS handshakes stand for the matrix's cell of its own TLS, which
	// make test does not run (engine.CIMatrixVerdicts): 8,967 ms in both
	// runs of a make test here, the cell's 3 runs 8.92 to 8.94 s.
	stalled []string
	// resets are the texts its resets (requires.resets) must begin with,
	// in order; each must pass.
	resets []string
}{
	{"sync", "sync.yaml", false, []string{"stalls at 2 slow readers", "stalls at 2 slow TLS handshakes"}, false, []string{"slow-tls"}, nil},
	{"haproxy", "haproxy.yaml", false, []string{"stalls at 2 slow readers"}, true, nil, nil},
	{"flask", "flask/stack.yaml", true, []string{"none up to 3 slow readers"}, false, nil, []string{letGo}},
	{"django", "django/stack.yaml", true, []string{"none up to 3 slow readers"}, false, nil, []string{letGo}},
	{"fastapi", "fastapi/stack.yaml", true, []string{"none up to 3 slow readers", "none up to 3 slow WebSocket consumers"}, false, nil, nil},
	{"gthread", "gthread.yaml", true, []string{"none up to 3 slow readers"}, true, nil, nil},
	{"nginx-buffered", "nginx-buffered.yaml", true, []string{"none up to 3 slow readers", "none up to 3 slow TLS handshakes", "none up to 2 slow HTTP/2 readers"}, true, nil, nil},
	{"image", "image/stack.yaml", true, []string{"none up to 3 silent connections"}, true, nil, nil},
}

// letGo begins the text of a reset that cut article A's two slow
// readers and found nothing held (engine.FoldReset).
const letGo = "lets go of 2 slow readers cut at 4 MiB: the next "

// exampleImage is the team image image/stack.yaml runs: the shop app on
// the lab's base image, built from fixtures/stacks/image/Dockerfile
// through the Docker API as a team's CI builds its own.
const exampleImage = "wsgilab-example/shop:1"

// TestStack checks a team's stack file, LAB_STACK (make check
// STACK=path/stack.yaml): one subtest per requirement, failing when the
// requirement failed; the verdict and its advice are logged and written
// to stacks.json. Without LAB_STACK it checks the example stacks of
// fixtures/stacks (exampleStacks: four under ci, eight under full), each
// of which must get its known verdict.
//
//	LAB_STACK=fixtures/stacks/sync.yaml go test ./bench -run TestStack -v
func TestStack(t *testing.T) {
	if sh := lab.Settings.Shard; !sh.Whole() {
		t.Skipf("shard %s: the stack checks run on shard 0", sh)
	}
	if f := lab.Settings.Stack; f != nil {
		st, err := lab.CheckStack(t, *f)
		require.NoError(t, err)
		job.RunDone(t.Log, t.Name(), st.Name, "", 1, 1, st.Verdict())
		var text strings.Builder
		require.NoError(t, st.Text(&text))
		t.Log("\n" + text.String())
		for _, b := range st.Behaviours {
			t.Run(engine.StackVerdictID(st.Name, b.Column), func(t *testing.T) {
				assert.True(t, b.Pass, "%s: requires %d %s, %s (fast p95 bound %g ms)", st.Name, b.Required, b.Noun, b.Text, st.FastP95Ms)
			})
		}
		for _, r := range st.Resets {
			t.Run(verdict.StackCutBase(st.Name, r.Column), func(t *testing.T) {
				assert.True(t, r.Pass, "%s: %s: %s", st.Name, r.Column, r.Text)
			})
		}
		return
	}
	for _, ex := range exampleStacks {
		t.Run(ex.id, func(t *testing.T) {
			if ex.full && lab.Settings.Profile != "full" {
				t.Skipf("%s: under the full profile only (make repro)", ex.file)
			}
			f, err := stackfile.Load(filepath.Join("..", "fixtures", "stacks", ex.file))
			require.NoError(t, err)
			if f.Image != nil {
				df, err := os.ReadFile(filepath.Join(f.Dir, "Dockerfile"))
				require.NoError(t, err)
				_, err = image.BuildDockerfile(context.Background(), lab.Session.Pool().Client, string(df),
					os.DirFS(filepath.Join(f.Dir, "..", "shop")), exampleImage, map[string]string{"BASE": env.BaseImage.Ref})
				require.NoError(t, err)
			}
			var opts []engine.StackOption
			if !ex.pass {
				opts = append(opts, engine.ExpectFails())
			}
			st, err := lab.CheckStack(t, f, opts...)
			require.NoError(t, err)
			job.RunDone(t.Log, t.Name(), st.Name, "", 1, 1, st.Verdict())
			t.Log(st.Advice)
			assert.Equal(t, ex.pass, st.Pass, "%+v", st.Behaviours)
			require.Len(t, st.Behaviours, len(ex.texts))
			require.Len(t, st.Resets, len(ex.resets))
			for i, r := range st.Resets {
				assert.True(t, r.Pass, "%s: %s", r.Column, r.Text)
				assert.True(t, strings.HasPrefix(r.Text, ex.resets[i]), "%s: %q, want it to begin %q", r.Column, r.Text, ex.resets[i])
			}
			for i, b := range st.Behaviours {
				assert.Equal(t, ex.texts[i], b.Text)
				if !slices.Contains(ex.stalled, b.Column) {
					continue
				}
				at := slices.IndexFunc(b.Steps, func(s report.StackStep) bool { return s.Clients == b.StallsAt })
				if assert.GreaterOrEqual(t, at, 0, "%s: no step where it stalls", b.Column) {
					s := b.Steps[at]
					assert.NotEmpty(t, s.P95MsRuns, "%s at %d", b.Column, s.Clients)
					for _, p := range s.P95MsRuns {
						assert.Greater(t, p, float64(verdict.StalledMs), "%s at %d: each run's p95 past the stall line", b.Column, s.Clients)
					}
				}
			}
		})
	}
}

// A feed path that does not take WebSockets is refused by the stack's
// WebSocket check, on the stack's own pod, before any step runs, with one
// error naming paths.ws and what it answered: a team's own NGINX location
// that drops the Upgrade passes the handshake on as a plain GET /feed,
// which the FastAPI app answers 200. (fastapi/stack.yaml passes the same
// check.)
func TestStackWSPath(t *testing.T) {
	if sh := lab.Settings.Shard; !sh.Whole() {
		t.Skipf("shard %s: the stack checks run on shard 0", sh)
	}
	f, err := stackfile.Load(filepath.Join("..", "fixtures", "stacks", "fastapi", "ws-no-upgrade.yaml"))
	require.NoError(t, err, "a valid stack file: only its pod can tell")
	_, err = lab.CheckStack(t, f)
	require.Error(t, err)
	t.Log(err)
	assert.Contains(t, err.Error(), "stack file fastapi-ws-no-upgrade: paths.ws /feed: ws://127.0.0.1:8080/feed answered the WebSocket Upgrade with 200 OK, not 101 Switching Protocols")
	assert.Contains(t, err.Error(), "does your proxy.config pass the Upgrade on")
	for _, c := range lab.Reports.Conditions() {
		assert.NotContains(t, c.ID, f.Name, "no step of a refused stack ran")
	}
}

// A team's own front-door config goes through the door's own check before
// any pod: a typo refuses the stack with the door's own words, naming the
// field, and starts nothing; a good config passes.
func TestStackProxyConfig(t *testing.T) {
	for _, tc := range []struct {
		file, stack string
		says        []string
	}{
		{"own-nginx-typo.yaml", "shop-typo", []string{"proxy.config nginx/typo.conf: stack: nginx -t refuses the config", `unknown directive "proxy_bufering"`}},
		{"own-haproxy-typo.yaml", "shop-haproxy-typo", []string{"proxy.config haproxy/typo.cfg: stack: haproxy -c refuses the config", "clinet"}},
		{"own-caddy-typo.yaml", "shop-caddy-typo", []string{"proxy.config caddy/typo.Caddyfile: stack: caddy validate refuses the config", "bufer_responses"}},
	} {
		t.Run(tc.stack, func(t *testing.T) {
			f, err := stackfile.Load(filepath.Join("..", "fixtures", "stacks", tc.file))
			require.NoError(t, err, "a valid stack file: only the door can tell")
			_, err = lab.CheckStack(t, f)
			require.Error(t, err)
			for _, w := range tc.says {
				assert.Contains(t, err.Error(), w)
			}
			for _, c := range lab.Reports.Conditions() {
				assert.NotContains(t, c.ID, tc.stack, "no step of a refused stack ran")
			}
		})
	}
	for _, file := range []string{"own-nginx.yaml", "own-haproxy.yaml"} {
		t.Run(file, func(t *testing.T) {
			good, err := stackfile.Load(filepath.Join("..", "fixtures", "stacks", file))
			require.NoError(t, err)
			sc, err := engine.NewStackCheck(good)
			require.NoError(t, err)
			require.NotNil(t, sc.Path.Proxy)
			if sc.Path.Proxy.Nginx != nil {
				require.True(t, sc.Path.Proxy.Nginx.CustomLocation())
			} else {
				require.Equal(t, "haproxy-custom", sc.Path.ID)
			}
			require.NoError(t, stack.ProxyCheck(lab.Session, lab.Image, *sc.Path.Proxy))
		})
	}
}

// TestStackResetCatchesLeak shows that a stack's reset catches the fault
// it exists for, in a team's own app: fixtures/stacks/leaky, whose
// downloads each keep an open file until their last byte is sent, must
// fail its reset's no-fd-leak verdict by exactly the 2 descriptors its 2
// cut readers left (not the catalog it opens on its first export and
// keeps, which the warm-up counts before the load), and hold every other
// verdict of the reset. One run of the reset step alone, in a report
// directory of its own (leakCaught; fixtures/stacks/flask and django pass
// the same step in TestStack).
//
//	go test ./bench -run TestStackResetCatchesLeak -v
func TestStackResetCatchesLeak(t *testing.T) {
	if sh := lab.Settings.Shard; !sh.Whole() {
		t.Skipf("shard %s: the stack checks run on shard 0", sh)
	}
	f, err := stackfile.Load(filepath.Join("..", "fixtures", "stacks", "leaky", "stack.yaml"))
	require.NoError(t, err)
	sc, err := engine.NewStackCheck(f)
	require.NoError(t, err)
	require.Len(t, sc.Resets, 1)
	app, err := image.EnsureStackApp(context.Background(), lab.Session.Pool().Client, lab.Image, f)
	require.NoError(t, err)
	sc = sc.WithImage(app.Ref)
	leakCaught(t, sc.ResetStep(sc.Resets[0]), sc.ResetVerdicts(sc.Resets[0]))
}
