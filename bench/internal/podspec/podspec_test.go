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
