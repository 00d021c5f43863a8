package podspec

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestConfigValidate(t *testing.T) {
	ok := New("wsgilab:x")
	require.NoError(t, ok.Validate())
	cases := map[string]struct {
		opt  Option
		want string
	}{
		"tiny cpu":      {WithAppLimits(Limits{CPUs: 0.01, Memory: 128 << 20}), "at least 1ms"},
		"tiny memory":   {WithClientLimits(Limits{CPUs: 0.2, Memory: 1 << 20}), "6 MiB"},
		"rmem two nums": {WithTCPMem("4096 131072", DefaultTCPWmem), "TCPRmem"},
		"wmem unsorted": {WithTCPMem(DefaultTCPRmem, "4096 16384 100"), "TCPWmem"},
		"no server":     {WithServer(Server{}), "no server command"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := New("wsgilab:x", tc.opt).Validate()
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestGunicornTimeout(t *testing.T) {
	s, err := GunicornTimeout(GunicornSync(2), 5)
	require.NoError(t, err)
	assert.Equal(t, "gunicorn-sync-2-timeout-5", s.ID)
	assert.Equal(t, []string{"--timeout", "5", "app:application"}, s.Cmd[len(s.Cmd)-3:])
	assert.Equal(t, "app:application", GunicornSync(2).Cmd[len(GunicornSync(2).Cmd)-1], "the row's own command is left alone")
	_, err = GunicornTimeout(Uvicorn(2), 5)
	assert.ErrorContains(t, err, "Gunicorn's")
	_, err = GunicornTimeout(GunicornSync(2), 0)
	assert.ErrorContains(t, err, "--timeout 0")
}

// A connection limit moved is an option before the app, named in the id;
// a malformed one is refused.
func TestWithFlag(t *testing.T) {
	s, err := WithFlag(Uvicorn(2), "--limit-concurrency", 256)
	require.NoError(t, err)
	assert.Equal(t, "uvicorn-2-limit-concurrency-256", s.ID)
	assert.Equal(t, []string{"--limit-concurrency", "256", "asgiapp:app"}, s.Cmd[len(s.Cmd)-3:])
	for _, bad := range []struct {
		flag  string
		value int
	}{{"limit", 1}, {"--", 1}, {"--a b", 1}, {"--backlog", 0}} {
		_, err := WithFlag(Uvicorn(2), bad.flag, bad.value)
		assert.Error(t, err, "%q %d", bad.flag, bad.value)
	}
}

// A framework replaces the app word of a server of its interface, named
// in the id; a WSGI framework on an ASGI server, or one it does not know,
// is refused.
func TestWithFramework(t *testing.T) {
	s, err := WithFramework(GunicornGthread(1, 4), Django)
	require.NoError(t, err)
	assert.Equal(t, "gunicorn-gthread-1x4-django", s.ID)
	assert.Equal(t, "djangoapp:application", s.Cmd[len(s.Cmd)-1])
	assert.Equal(t, GunicornGthread(1, 4).Cmd[:len(s.Cmd)-1], s.Cmd[:len(s.Cmd)-1])
	s, err = WithFramework(Uvicorn(2), FastAPI)
	require.NoError(t, err)
	assert.Equal(t, "fastapiapp:app", s.Cmd[len(s.Cmd)-1])
	_, err = WithFramework(Uvicorn(2), Flask)
	assert.ErrorContains(t, err, "replaces the app app:application")
	_, err = WithFramework(GunicornSync(2), FastAPI)
	assert.ErrorContains(t, err, "replaces the app asgiapp:app")
	_, err = WithFramework(GunicornSync(2), "bottle")
	assert.ErrorContains(t, err, `framework "bottle"`)
}

func TestWithGunicorn(t *testing.T) {
	s, err := WithGunicorn(GunicornGevent(2), GunicornBookworm)
	require.NoError(t, err)
	assert.Equal(t, "gunicorn-gevent-2-20.1.0", s.ID)
	assert.Equal(t, GunicornGevent(2).Cmd, s.Cmd)
	assert.Equal(t, []string{"PYTHONPATH=/opt/gunicorn-20.1.0"}, s.Env)
	// A column's own change keeps the release (its environment).
	to, err := GunicornTimeout(s, 5)
	require.NoError(t, err)
	assert.Equal(t, s.Env, to.Env)

	_, err = WithGunicorn(Uvicorn(2), GunicornBookworm)
	assert.ErrorContains(t, err, "not Gunicorn")
	_, err = WithGunicorn(GunicornSync(2), "19.9.0")
	assert.ErrorContains(t, err, `Gunicorn release "19.9.0": the image holds ["20.1.0"] beside 23.0.0`)
	_, err = WithGunicorn(s, GunicornBookworm)
	assert.ErrorContains(t, err, "sets PYTHONPATH already")
}
