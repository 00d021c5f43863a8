package engine

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The report's types and its renderer read report files only: they link
// neither the testing package nor Docker's client, the stack or the
// engine, so a report renders with no engine at hand. labreport links the
// engine, the summary side, since it merges shards (-merge re-summarizes
// their raw records with the engine's condition table), but never
// testing, Docker's client, the stack or the run side (labrun): rendering
// and merging run no pod.
func TestReportPackagesLinkNoStack(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	for _, pkg := range []string{"wsgilab/bench/internal/report", "wsgilab/bench/internal/htmlreport", "wsgilab/bench/cmd/labreport"} {
		out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
		require.NoError(t, err, "%s", out)
		deps := strings.Fields(string(out))
		require.Contains(t, deps, "wsgilab/bench/internal/report", "the check reads the real dependency list")
		banned := []string{"testing", "github.com/ory/dockertest", "github.com/fsouza/go-dockerclient",
			"github.com/docker/docker", "wsgilab/bench/internal/stack", "wsgilab/bench/internal/engine"}
		if pkg == "wsgilab/bench/cmd/labreport" {
			banned = append(banned[:len(banned)-1], "wsgilab/bench/internal/labrun", "wsgilab/bench/internal/image")
		}
		for _, dep := range deps {
			for _, b := range banned {
				assert.False(t, dep == b || strings.HasPrefix(dep, b+"/"), "%s links %s", pkg, dep)
			}
		}
	}
}
