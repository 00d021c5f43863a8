package stack

import (
	"os"
	"os/exec"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Reap's judgement of a series, without Docker: only a series whose owner
// is provably gone from this host is dead.
func TestSessionJudgesDeadSeries(t *testing.T) {
	s := &Session{ID: "s-me", PID: os.Getpid(), Host: "here", Boot: "boot-1"}
	gone := exec.Command("true")
	require.NoError(t, gone.Run())
	gonePID := strconv.Itoa(gone.Process.Pid) // exited and reaped: nobody has it now

	labels := func(series, pid, host, boot string) map[string]string {
		return map[string]string{LabelSeries: series, LabelPID: pid, LabelHost: host, LabelBoot: boot}
	}
	cases := []struct {
		name   string
		labels map[string]string
		dead   bool
		why    string
	}{
		{"live process", labels("s-other", strconv.Itoa(os.Getpid()), "here", "boot-1"), false, ""},
		{"gone process", labels("s-other", gonePID, "here", "boot-1"), true, "its process " + gonePID + " is gone"},
		{"another host", labels("s-other", gonePID, "there", "boot-9"), false, ""},
		{"rebooted", labels("s-other", strconv.Itoa(os.Getpid()), "here", "boot-0"), true, "rebooted"},
		{"no pid", labels("s-other", "", "here", "boot-1"), true, "no owner pid"},
		{"before sessions", map[string]string{Label: "1"}, true, "no series label"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dead, why := s.dead(tc.labels)
			assert.Equal(t, tc.dead, dead)
			assert.Contains(t, why, tc.why)
		})
	}
}

func TestSessionNames(t *testing.T) {
	s := &Session{ID: "s20261130T120000-abcd"}
	assert.Equal(t, "wsgilab-s20261130T120000-abcd-direct-2dl-r3-app", s.name("app", "direct-2dl", 3))
	assert.Equal(t, "wsgilab-s20261130T120000-abcd-a_b-r1-client", s.name("client", "a b", 1), "only Docker's name characters")
}
