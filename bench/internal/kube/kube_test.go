package kube

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"wsgilab/bench/internal/engine"
	"wsgilab/bench/internal/podspec"
)

var update = flag.Bool("update", false, "rewrite the golden manifest in fixtures/kube")

const golden = "../../../fixtures/kube/article-a.yaml"

var opts = Options{Series: "article-a", Image: "wsgilab:test", Nodes: 4}

// decode reads a rendered stream back strictly, as the API server's
// types: an unknown or misspelt field is an error.
func decode(t *testing.T, b []byte) (corev1.ConfigMap, batchv1.Job) {
	t.Helper()
	docs := strings.Split(string(b), "\n---\n")
	require.Len(t, docs, 2)
	var cm corev1.ConfigMap
	var job batchv1.Job
	require.NoError(t, yaml.UnmarshalStrict([]byte(docs[0]), &cm))
	require.NoError(t, yaml.UnmarshalStrict([]byte(docs[1]), &job))
	return cm, job
}

// TestRenderedJobs renders article A's ci table and the ci matrix table,
// decodes every manifest strictly into batch/v1 Job and core/v1 ConfigMap,
// and checks each property the issue lists: indexed completions, one
// process namespace, the TCP sysctls, app, NGINX and sampler as native
// sidecars and the client as the one container, SYS_PTRACE on the sampler
// only, requests equal to limits, and one measuring pod per node.
func TestRenderedJobs(t *testing.T) {
	plan := engine.Plans["ci"]
	for _, tc := range []struct {
		name  string
		conds []engine.Condition
		runs  func(engine.Condition) int
		jobs  int
	}{
		// Stock and article-host TCP memory, each direct and behind NGINX.
		{"article-a", plan.Conditions, func(c engine.Condition) int { return c.Runs(engine.DefaultRuns) }, 4},
		{"matrix", renderable(t, plan.Matrix), func(engine.Condition) int { return plan.MatrixRuns }, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := opts
			o.Series = tc.name
			jobs, err := Render(tc.conds, tc.runs, o)
			require.NoError(t, err)
			if tc.jobs > 0 {
				require.Equal(t, tc.jobs, len(jobs), "jobs")
			}
			want := map[string]int{}
			for _, c := range tc.conds {
				want[c.ID] = tc.runs(c)
			}
			got := map[string]int{}
			for _, j := range jobs {
				var b bytes.Buffer
				require.NoError(t, j.WriteYAML(&b))
				cm, job := decode(t, b.Bytes())
				checkJob(t, job, cm, o)
				for _, e := range j.Entries {
					got[e.Condition]++
				}
				if tc.name == "article-a" && j.Job.Name == "article-a-0" {
					if *update {
						require.NoError(t, os.WriteFile(golden, b.Bytes(), 0o644))
					}
					g, err := os.ReadFile(golden)
					require.NoError(t, err)
					assert.Equal(t, string(g), b.String(), "the rendered Job moved; rerun with -update and read the diff")
				}
			}
			assert.Equal(t, want, got, "every run of every condition, once")
		})
	}
}

func checkJob(t *testing.T, job batchv1.Job, cm corev1.ConfigMap, o Options) {
	t.Helper()
	var entries []Entry
	require.NoError(t, json.Unmarshal([]byte(cm.Data[TableFile]), &entries))
	js := job.Spec
	require.NotNil(t, js.CompletionMode)
	assert.Equal(t, batchv1.IndexedCompletion, *js.CompletionMode)
	assert.Equal(t, int32(len(entries)), *js.Completions, "completions = runs")
	assert.Equal(t, int32(min(o.Nodes, len(entries))), *js.Parallelism, "parallelism = nodes")
	for i, e := range entries {
		assert.Equal(t, i, e.Index, "entry %d's index", i)
	}

	ps := js.Template.Spec
	assert.Equal(t, corev1.RestartPolicyNever, ps.RestartPolicy)
	require.NotNil(t, ps.ShareProcessNamespace)
	assert.True(t, *ps.ShareProcessNamespace, "one PID namespace, as the sampler needs")
	sysctls := map[string]string{}
	for _, s := range ps.SecurityContext.Sysctls {
		sysctls[s.Name] = s.Value
	}
	assert.Equal(t, entries[0].Pod.TCPRmem, sysctls["net.ipv4.tcp_rmem"])
	assert.Equal(t, entries[0].Pod.TCPWmem, sysctls["net.ipv4.tcp_wmem"])
	for _, e := range entries {
		assert.Equal(t, e.Pod.TCPWmem, sysctls["net.ipv4.tcp_wmem"], "%s runs under its own tcp_wmem", e.Condition)
	}

	// One measurement per node: a required anti-affinity on the host name
	// against every measuring pod, this one included.
	anti := ps.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	require.Len(t, anti, 1)
	assert.Equal(t, "kubernetes.io/hostname", anti[0].TopologyKey)
	for k, v := range anti[0].LabelSelector.MatchLabels {
		assert.Equal(t, v, js.Template.Labels[k], "the selector matches the pod itself")
	}
	assert.Contains(t, ps.Tolerations, corev1.Toleration{Key: Taint, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})

	var sidecars []string
	for _, c := range ps.InitContainers {
		sidecars = append(sidecars, c.Name)
		require.NotNil(t, c.RestartPolicy, "%s is a native sidecar", c.Name)
		assert.Equal(t, corev1.ContainerRestartPolicyAlways, *c.RestartPolicy)
	}
	wantSidecars := []string{podspec.RoleApp, podspec.RoleSampler}
	if entries[0].Pod.Proxy != nil {
		wantSidecars = []string{podspec.RoleApp, podspec.RoleProxy, podspec.RoleSampler}
	}
	assert.Equal(t, wantSidecars, sidecars, "app, NGINX (on a proxied path), then the sampler")
	require.Len(t, ps.Containers, 1)
	assert.Equal(t, podspec.RoleClient, ps.Containers[0].Name, "the client is the one regular container")
	assert.Nil(t, ps.Containers[0].RestartPolicy)

	limits := map[string]podspec.Limits{podspec.RoleApp: entries[0].Pod.App, podspec.RoleProxy: entries[0].Pod.ProxyLimits,
		podspec.RoleClient: entries[0].Pod.Client, podspec.RoleSampler: {CPUs: SamplerCPUs, Memory: SamplerMemory}}
	for _, c := range append(ps.InitContainers, ps.Containers...) {
		assert.Equal(t, corev1.PullNever, c.ImagePullPolicy, "%s: images are imported, never pulled", c.Name)
		assert.Equal(t, o.Image, c.Image)
		assert.Equal(t, []string{"/usr/local/bin/labagent", "pod", c.Name}, c.Command)
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			req, lim := c.Resources.Requests[r], c.Resources.Limits[r]
			assert.Truef(t, req.Equal(lim), "%s: %s request %s, limit %s", c.Name, r, req.String(), lim.String())
		}
		l := limits[c.Name]
		cpuLim, memLim := c.Resources.Limits[corev1.ResourceCPU], c.Resources.Limits[corev1.ResourceMemory]
		assert.Equal(t, int64(l.CPUs*1000+0.5), cpuLim.MilliValue(), "%s's CPU", c.Name)
		assert.Equal(t, l.Memory, memLim.Value(), "%s's memory", c.Name)

		sc := c.SecurityContext
		assert.Equal(t, []corev1.Capability{"ALL"}, sc.Capabilities.Drop, c.Name)
		assert.False(t, *sc.AllowPrivilegeEscalation, c.Name)
		assert.True(t, *sc.ReadOnlyRootFilesystem, c.Name)
		if c.Name == podspec.RoleSampler {
			assert.Contains(t, sc.Capabilities.Add, corev1.Capability("SYS_PTRACE"))
		} else {
			assert.NotContains(t, sc.Capabilities.Add, corev1.Capability("SYS_PTRACE"), "%s has SYS_PTRACE", c.Name)
			assert.Equal(t, int64(65534), *sc.RunAsUser, c.Name)
		}
	}
}

func TestRenderRefusesBadOptions(t *testing.T) {
	conds := engine.Plans["ci"].Conditions[:1]
	one := func(engine.Condition) int { return 1 }
	for name, tc := range map[string]struct {
		o    Options
		want string
	}{
		"series": {Options{Series: "Article_A", Image: "wsgilab:x", Nodes: 1}, `series "Article_A": want a DNS label`},
		"image":  {Options{Series: "a", Nodes: 1}, `image "": want the lab image's reference`},
		"nodes":  {Options{Series: "a", Image: "wsgilab:x"}, "nodes 0: want the node pool's size, 1 or more"},
		"ns":     {Options{Series: "a", Image: "wsgilab:x", Nodes: 1, Namespace: "Lab"}, `namespace "Lab": want a DNS label`},
	} {
		_, err := Render(conds, one, tc.o)
		assert.ErrorContains(t, err, tc.want, name)
	}
	_, err := Render(nil, one, opts)
	assert.ErrorContains(t, err, "no condition to render")
}

// renderable are cs less those Render refuses (Renderable): under ci, the
// matrix's TLS cells (one slow-TLS, two HTTP/2) and its fault cell,
// whose hop the rendered pods lack, and nothing else.
func renderable(t *testing.T, cs []engine.Condition) []engine.Condition {
	var out []engine.Condition
	var left []string
	for _, c := range cs {
		if err := Renderable(c); err != nil {
			why := "speaks TLS"
			if c.Fault != "" {
				why = "puts a Toxiproxy hop on its path"
			}
			assert.ErrorContains(t, err, why)
			_, err := Render([]engine.Condition{c}, func(engine.Condition) int { return 1 }, opts)
			assert.ErrorContains(t, err, why, "Render refuses what Renderable does")
			left = append(left, c.ID)
			continue
		}
		out = append(out, c)
	}
	assert.Equal(t, []string{"matrix-slow-tls-gunicorn-sync-2-nginx-tls-on",
		"matrix-h2-slow-read-gunicorn-sync-2-nginx-h2-off", "matrix-h2-many-streams-gunicorn-sync-2-nginx-h2-on", engine.CIFaultCell}, left,
		"the TLS cells, HTTP/2's among them, and the fault cell")
	return out
}

// A condition with a Toxiproxy hop on its path (the pacer cross-check's
// twins) is refused by name: the rendered pods have no hop container.
func TestHopsNotRendered(t *testing.T) {
	for _, c := range engine.PacerCells("direct-2dl", "nginx-on-2dl") {
		err := Renderable(c)
		assert.ErrorContains(t, err, "kube: "+c.ID+" puts a Toxiproxy hop on its path, a container the rendered pods do not have yet")
		_, err = Render([]engine.Condition{c}, func(engine.Condition) int { return 1 }, opts)
		assert.ErrorContains(t, err, "puts a Toxiproxy hop on its path", "Render refuses what Renderable does")
	}
}
