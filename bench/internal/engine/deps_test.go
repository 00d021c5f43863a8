package engine

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// labreport only renders HTML from report files: it must link neither the
// testing package nor Docker's client, so the report types cannot depend
// on the stack.
func TestLabreportLinksNoStack(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	out, err := exec.Command("go", "list", "-deps", "wsgilab/bench/cmd/labreport").CombinedOutput()
	require.NoError(t, err, "%s", out)
	deps := strings.Fields(string(out))
	require.Contains(t, deps, "wsgilab/bench/internal/report", "the check reads the real dependency list")
	for _, dep := range deps {
		for _, banned := range []string{"testing", "github.com/ory/dockertest", "github.com/fsouza/go-dockerclient",
			"github.com/docker/docker", "wsgilab/bench/internal/stack", "wsgilab/bench/internal/engine"} {
			assert.False(t, dep == banned || strings.HasPrefix(dep, banned+"/"), "labreport links %s", dep)
		}
	}
}
