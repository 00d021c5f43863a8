package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A hop container with a missing or malformed spec stops at once with one
// error naming LAB_HOPS or the hop, before anything listens.
func TestRunHopRefusesBadSpecs(t *testing.T) {
	for _, tc := range []struct{ spec, want string }{
		{"", "hop: LAB_HOPS is empty: want a JSON array of hops"},
		{"{", "hop: LAB_HOPS: unexpected EOF"},
		{"[]", "hop: LAB_HOPS holds no hop"},
		{`[{"listen":"127.0.0.1:0","upstream":"127.0.0.1:1","toxic":[]}]`, `hop: LAB_HOPS: json: unknown field "toxic"`},
		{`[{"listen":"127.0.0.1:0","upstream":"127.0.0.1:1"},{"listen":"x","upstream":"127.0.0.1:1"}]`, `hop 2: toxic: hop listen "x": want host:port`},
	} {
		err := runHop(tc.spec)
		require.Error(t, err, tc.spec)
		assert.Contains(t, err.Error(), tc.want)
	}
}
