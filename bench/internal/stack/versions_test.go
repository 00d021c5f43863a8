package stack

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseVersions(t *testing.T) {
	v, err := parseVersions("python=3.11.2\ngunicorn=23.0.0\ndjango=3.2.25\ngevent=22.10.2\n" +
		"nginx=nginx version: nginx/1.22.1\nuwsgi=2.0.21-debian\npkg:nginx=1.22.1-9+deb12u11\npkg:python3=3.11.2-1+b1\n")
	require.NoError(t, err)
	assert.Equal(t, "1.22.1", v.Nginx)
	assert.Equal(t, "23.0.0", v.Gunicorn)
	assert.Equal(t, "1.22.1-9+deb12u11", v.Packages["nginx"])

	_, err = parseVersions("python=3.11.2\n")
	assert.ErrorContains(t, err, "incomplete")
}

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
