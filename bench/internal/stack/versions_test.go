package stack

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseVersions(t *testing.T) {
	v, err := parseVersions("python=3.11.2\ngunicorn=23.0.0\ndjango=3.2.25\ngevent=22.10.2\n" +
		"uvicorn=0.17.6\nuvloop=0.17.0\nhttptools=0.1.1\nnginx=nginx version: nginx/1.22.1\nuwsgi=2.0.21-debian\npkg:nginx=1.22.1-9+deb12u11\npkg:python3=3.11.2-1+b1\n")
	require.NoError(t, err)
	assert.Equal(t, "1.22.1", v.Nginx)
	assert.Equal(t, "23.0.0", v.Gunicorn)
	assert.Equal(t, "0.17.6", v.Uvicorn)
	assert.Equal(t, "0.17.0", v.Uvloop)
	assert.Equal(t, "1.22.1-9+deb12u11", v.Packages["nginx"])

	_, err = parseVersions("python=3.11.2\n")
	assert.ErrorContains(t, err, "incomplete")
}
