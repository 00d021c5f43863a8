package gate

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

const workflow = "../../../fixtures/ci/github-actions.yml"

// The example workflow and the YAML the lab ships pass Debian's yamllint
// in strict mode (warnings fail too). make deps installs yamllint.
func TestYAMLLint(t *testing.T) {
	lint, err := exec.LookPath("yamllint")
	require.NoError(t, err, "yamllint not found: make deps installs it (apt-get install yamllint)")
	out, err := exec.Command(lint, "-s", "-f", "parsable", workflow, "../../../fixtures/gate/thresholds.yaml").CombinedOutput()
	require.NoError(t, err, "yamllint:\n%s", out)
}

// The workflow does what the README says: make test, the three files kept
// as artifacts (always, so a red run keeps them), and on a pull request
// the gate against main's last kept benchmark file.
func TestWorkflowSteps(t *testing.T) {
	b, err := os.ReadFile(workflow)
	require.NoError(t, err)
	var wf struct {
		On   map[string]any `yaml:"on"`
		Jobs map[string]struct {
			Env   map[string]string `yaml:"env"`
			Steps []struct {
				Name string            `yaml:"name"`
				Uses string            `yaml:"uses"`
				If   string            `yaml:"if"`
				Run  string            `yaml:"run"`
				With map[string]string `yaml:"with"`
			} `yaml:"steps"`
		} `yaml:"jobs"`
	}
	require.NoError(t, yaml.Unmarshal(b, &wf))
	assert.Contains(t, wf.On, "push")
	assert.Contains(t, wf.On, "pull_request")
	require.Len(t, wf.Jobs, 1)
	var runs []string
	var kept, gated bool
	for _, job := range wf.Jobs {
		for _, s := range job.Steps {
			runs = append(runs, s.Run)
			if strings.HasPrefix(s.Uses, "actions/upload-artifact@") {
				kept = s.If == "always()"
				for _, f := range []string{"report.html", "junit.xml", "bench.txt"} {
					assert.Contains(t, s.With["path"], f)
				}
			}
			if strings.Contains(s.Run, "make gate BASE=base/bench.txt") {
				gated = s.If == "github.event_name == 'pull_request'"
			}
		}
	}
	all := strings.Join(runs, "\n")
	assert.Contains(t, all, "make test")
	assert.Contains(t, all, "make bench BENCH_COUNT=6")
	assert.Contains(t, all, "gh run download")
	assert.Contains(t, all, "--event push", "the base comes from main's own pushes, never a fork's")
	assert.True(t, kept, "the reports are kept, red or green")
	assert.True(t, gated, "the gate runs on pull requests")
}
