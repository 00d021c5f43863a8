package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"wsgilab/bench/internal/disturb"
	"wsgilab/bench/internal/engine"
	"wsgilab/bench/internal/kube"
	"wsgilab/bench/internal/podspec"
	"wsgilab/bench/internal/report"
	"wsgilab/bench/internal/stack"
)

// TestKubePod renders article A's nginx-on-2dl as an Indexed Job and runs
// its pod on Docker as a kubelet would (stack.KubePod: the pause holder,
// the sysctls, the volumes, the sidecars in order behind their startup
// probes, the client last), with no cluster. Every container runs
// `labagent pod <role>` from the run table, and the client prints the
// run's raw record: it must decode strictly as the engine's Record, and
// summarize as a valid run showing what the Docker pod shows (NGINX
// buffers the downloads in temp files; /fast stays fast), with each
// container's limits and the node's machine read back from inside.
func TestKubePod(t *testing.T) {
	if *leakMode != "" {
		t.Skip("TestNoLeaks' child")
	}
	c := engine.Pick(engine.ArticleA, "nginx-on-2dl")[0]
	jobs, err := kube.Render([]engine.Condition{c}, func(engine.Condition) int { return 1 },
		kube.Options{Series: "kube-pod", Image: lab.Image, Nodes: 1})
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	j := jobs[0]
	// The run is judged by the redo rule as a series' runs are: one run
	// with the client's own stall would be read as NGINX's (CI once saw
	// /fast p95 at 21 ms here against 2 ms).
	rec, err := lab.RunPod(t, "kube-"+c.ID, c, func(tb stack.TB, n int) (engine.Record, error) {
		out, err := stack.KubePod(tb, lab.Session, j.Job.Spec.Template.Spec,
			map[string]map[string]string{"run-table": j.Table.Data}, []string{"JOB_COMPLETION_INDEX=0"},
			stack.Ident{Condition: "kube-" + c.ID, Run: n})
		if err != nil {
			return engine.Record{}, fmt.Errorf("the pod's client printed:\n%s\n%w", tail(string(out), 10), err)
		}
		var rec engine.Record
		dec := json.NewDecoder(bytes.NewReader(out))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&rec); err != nil {
			return rec, fmt.Errorf("the client's stdout is not one raw record: %w", err)
		}
		return rec, nil
	})
	require.NoError(t, err)
	assert.Equal(t, c.ID, rec.Condition)
	rows := engine.SummarizeRun(c, rec)
	assert.True(t, rows.Run.Valid, "invalid: %s", rows.Run.Invalid)
	assert.True(t, rows.Run.Sound, "unsound: %s", rows.Run.Invalid)
	require.NotNil(t, rec.Sampler)
	var tempPeak int64
	for _, s := range rec.Sampler.TempFiles {
		tempPeak = max(tempPeak, s.TotalBytes)
	}
	noise := disturb.Noise(rows.Run)
	t.Logf("in the rendered pod: /fast p95 %.2f ms, app write %.3f s, temp files peak %.1f MiB; the client's lag %.2f ms (second %.2f), throttled %.3f",
		rows.Run.P95Ms, rows.Run.WriteS, float64(tempPeak)/(1<<20), noise.LagMaxMs, noise.LagSecondMs, noise.ClientThrottledShare)
	assert.Less(t, rows.Run.P95Ms, 10.0, "/fast behind buffering on")
	assert.Greater(t, tempPeak, int64(8<<20), "NGINX buffered the downloads")

	for _, role := range []string{podspec.RoleApp, podspec.RoleProxy, podspec.RoleClient} {
		l, ok := rec.Sampler.Limits[role]
		if assert.True(t, ok, "%s's limits read back", role) {
			assert.Equal(t, stack.KubeCPUPeriod.Microseconds(), l.CPUPeriodMicros, role)
		}
	}
	assert.InDelta(t, podspec.DefaultAppCPUs, rec.Sampler.Limits[podspec.RoleApp].CPUs(), 0.001)
	assert.NotEmpty(t, rec.Client.Node.CPUModel)
	assert.Equal(t, stack.KubePodNode, rec.Client.Node.Name, "the node's name, through the downward API")
	assert.Equal(t, c.TCP.Wmem, rec.Client.Sysctls["net.ipv4.tcp_wmem"], "the pod's sysctls")

	// kubectl logs -> labkube collect -> labreport -merge, on this record.
	shard := filepath.Join(t.TempDir(), "kube")
	require.NoError(t, engine.Collect(shard, "ci", "kube-pod", []engine.Record{rec}, false))
	m, err := engine.Merge(filepath.Join(t.TempDir(), "merged"), []string{shard}, engine.MergeOptions{})
	require.NoError(t, err)
	require.Len(t, m.Conditions, 1)
	assert.Equal(t, "kubernetes", m.Conditions[0].RanOn.Engine)
	assert.Equal(t, stack.KubePodNode, m.Conditions[0].RanOn.EngineHost, "the merge names the node")
	held := 0
	for _, cl := range m.Claims {
		if cl.Status != report.StatusNotRun {
			assert.Equal(t, report.StatusHolds, cl.Status, "%s: %s", cl.ID, cl.Note)
			held++
		}
	}
	assert.GreaterOrEqual(t, held, 4, "nginx-on-2dl's own verdicts judged on the pod's run")
}
