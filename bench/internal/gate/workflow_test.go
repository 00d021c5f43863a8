package gate

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rhysd/actionlint"
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

// The workflow passes actionlint (github.com/rhysd/actionlint, as a
// library: the expressions, the job's shape, the actions' inputs), with
// its shellcheck integration off, so the lint is the same on any machine.
func TestActionlint(t *testing.T) {
	var out strings.Builder
	l, err := actionlint.NewLinter(&out, &actionlint.LinterOptions{})
	require.NoError(t, err)
	errs, err := l.LintFile(workflow, nil)
	require.NoError(t, err)
	assert.Empty(t, errs, "actionlint:\n%s", out.String())
}

// The workflow does what the README says, on a stock runner: the stack
// file checked before anything is installed; the runner prepared without
// a browser and the image built from Debian's archive; the stack checked
// and the gate applied by labcheck and labgate themselves (make would
// turn both failures into 2), each step telling 1 from 2; the reports
// kept, red or green; the gate on pull requests against main's own last
// green push.
func TestWorkflowSteps(t *testing.T) {
	b, err := os.ReadFile(workflow)
	require.NoError(t, err)
	var wf struct {
		On   map[string]any `yaml:"on"`
		Jobs map[string]struct {
			RunsOn string            `yaml:"runs-on"`
			Env    map[string]string `yaml:"env"`
			Steps  []struct {
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
		assert.Equal(t, "ubuntu-24.04", job.RunsOn, "a stock runner, not Debian")
		assert.Equal(t, "http://deb.debian.org/debian", job.Env["LAB_DEBIAN_MIRROR"], "the image from Debian's archive on a host that is not Debian")
		assert.NotEmpty(t, job.Env["STACK"])
		_, err := os.Stat(filepath.Join("..", "..", "..", job.Env["STACK"]))
		assert.NoError(t, err, "the example's stack file exists")
		for _, s := range job.Steps {
			runs = append(runs, s.Run)
			if strings.HasPrefix(s.Uses, "actions/upload-artifact@") {
				kept = s.If == "always()"
				for _, f := range []string{"report.html", "junit.xml", "stacks.json", "bench.txt"} {
					assert.Contains(t, s.With["path"], f)
				}
			}
			if strings.Contains(s.Run, "labgate\" -base base/bench.txt") {
				gated = s.If == "github.event_name == 'pull_request'"
				assert.Contains(t, s.Run, "1) ", "the gate's step tells a regression")
				assert.Contains(t, s.Run, "*) ", "from an undecided comparison")
			}
			if strings.Contains(s.Run, "labcheck\" -stack \"$STACK\"") {
				assert.Contains(t, s.Run, "1) ", "the check's step tells a failed stack")
				assert.Contains(t, s.Run, "*) ", "from an undecided check")
			}
		}
	}
	all := strings.Join(runs, "\n")
	validate, prepare := strings.Index(all, `LAB_STACK="$STACK"`), strings.Index(all, "setup.sh run")
	assert.True(t, validate >= 0 && prepare > validate, "the stack file is checked before the runner is prepared")
	assert.NotContains(t, all, "make check", "make would turn a failed stack into 2")
	assert.NotContains(t, all, "make gate", "make would turn a regression into 2")
	assert.Contains(t, all, "make bench BENCH_COUNT=6")
	assert.Contains(t, all, "gh run download")
	assert.Contains(t, all, "--event push", "the base comes from main's own pushes, never a fork's")
	assert.True(t, kept, "the reports are kept, red or green")
	assert.True(t, gated, "the gate runs on pull requests")
}
