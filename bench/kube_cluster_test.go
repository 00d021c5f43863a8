package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	dc "github.com/ory/dockertest/v3/docker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"

	"wsgilab/bench/internal/cluster"
	"wsgilab/bench/internal/engine"
	"wsgilab/bench/internal/kube"
	"wsgilab/bench/internal/report"
)

// kubeSeries names the Jobs TestKubeCluster renders.
const kubeSeries = "wsgilab-a"

// TestKubeCluster runs article A's ci table as the rendered Indexed Jobs
// on a real single-node Kubernetes built from upstream source (make
// kube-e2e: LAB_KUBE_BIN; unset, it is skipped): the user's steps, each
// by the lab's own commands. labkube render (make kube) writes the
// manifests; kubectl applies them with server-side field validation, the
// namespace at its Pod Security level and the lab's admission policy
// first; the Jobs run on the node; kubectl logs collects each pod's
// record; labkube collect and labreport -merge judge them. The API server
// must refuse a Job with an unsafe sysctl and one whose app lost its
// startup probe (admission), and the merged verdicts must equal
// TestArticleA's, which ran the same table under Docker before it in this
// process (same-as-docker).
func TestKubeCluster(t *testing.T) {
	if *leakMode != "" {
		t.Skip("TestNoLeaks' child")
	}
	bin := lab.Settings.KubeBin
	if bin == "" {
		t.Skip("LAB_KUBE_BIN is unset: make kube-e2e builds a single-node Kubernetes and runs this test on it")
	}
	require.Equal(t, "ci", lab.Settings.Profile, "the Jobs are article A's ci table: LAB_PROFILE=ci (make kube-e2e sets it)")
	docker := lab.Reports.Claims(engine.TableA.ID)
	require.NotEmpty(t, docker, "TestArticleA's Docker series of the same table runs first (make kube-e2e runs both)")
	base := filepath.Join(lab.Reports.Dir(), "kube")
	require.NoError(t, os.RemoveAll(base))

	start := time.Now()
	cl, err := cluster.Start(cluster.Config{Bin: bin, Log: testLog{t}, UnsafeSysctls: kube.UnsafeSysctls, Taint: kube.Taint})
	require.NoError(t, err)
	// Ctrl-C, SIGTERM and the -timeout take the cluster down too: the
	// series' guard runs OnStop before it exits, where no cleanup runs.
	onStop := lab.Session.OnStop
	lab.Session.OnStop = func() {
		if err := cl.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "wsgilab: the cluster's teardown: %v\n", err)
		}
		if onStop != nil {
			onStop()
		}
	}
	t.Cleanup(func() {
		lab.Session.OnStop = onStop
		assert.NoError(t, cl.Stop(), "the cluster's teardown")
		assert.NoError(t, cl.Logs(filepath.Join(base, "logs")))
	})
	t.Logf("cluster up in %.1f s", time.Since(start).Seconds())
	start = time.Now()
	require.NoError(t, importImage(cl, lab.Image))
	t.Logf("lab image %s imported in %.1f s", lab.Image, time.Since(start).Seconds())

	// The manual's commands (bench/README.md, "A Kubernetes Indexed
	// Job") from make kube on, run as written, with the image's tag and
	// reports/ in this series' directory (make kube's KUBE_DIR too).
	_, tag, _ := strings.Cut(lab.Image, ":")
	script := manualScript(t, tag, base)
	root, err := moduleRoot()
	require.NoError(t, err)
	manifests := filepath.Join(base, "kube")
	// Every command ends within the bound (the manual's wait for the Jobs
	// has none of its own): 50 pods took 907 s here.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Minute)
	defer cancel()
	shell := func(t *testing.T, lines []string) {
		t.Helper()
		cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", strings.Join(lines, "\n"))
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "KUBECONFIG="+cl.Kubeconfig(), "PATH="+bin+":"+os.Getenv("PATH"), "KUBE_DIR="+manifests)
		out, err := cmd.CombinedOutput()
		t.Logf("%s\n%s", strings.Join(lines, "\n"), tail(string(out), 20))
		require.NoError(t, err)
	}
	shell(t, script[:2]) // make kube, and the namespace with its policy

	t.Run("admission", func(t *testing.T) {
		job := renderedJob(t, filepath.Join(manifests, kubeSeries+"-0.yaml"))
		dry := func(j batchv1.Job) error {
			b, err := yaml.Marshal(j)
			require.NoError(t, err)
			_, err = cl.Kubectl(ctx, bytes.NewReader(b), "apply", "--server-side", "--validate=strict", "--dry-run=server", "-f", "-")
			return err
		}
		sysctl := *job.DeepCopy()
		sysctl.Spec.Template.Spec.SecurityContext.Sysctls = append(sysctl.Spec.Template.Spec.SecurityContext.Sysctls,
			corev1.Sysctl{Name: "kernel.msgmax", Value: "65536"})
		noProbe, burstable, sameQuantity := *job.DeepCopy(), *job.DeepCopy(), *job.DeepCopy()
		for i, c := range job.Spec.Template.Spec.InitContainers {
			if c.Name == "app" {
				noProbe.Spec.Template.Spec.InitContainers[i].StartupProbe = nil
				burstable.Spec.Template.Spec.InitContainers[i].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("100m")
				// The same quantity, written otherwise (bytes for 128Mi):
				// not refused.
				sameQuantity.Spec.Template.Spec.InitContainers[i].Resources.Requests[corev1.ResourceMemory] =
					resource.MustParse(strconv.FormatInt(c.Resources.Limits.Memory().Value(), 10))
			}
		}
		// A new policy takes effect within seconds: until the first
		// refusal, the API server has not loaded it yet.
		var err error
		for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(time.Second) {
			if err = dry(sysctl); err != nil {
				break
			}
		}
		require.Error(t, err, "a Job with an unsafe sysctl")
		assert.Contains(t, err.Error(), "ValidatingAdmissionPolicy '"+kube.PolicyName+"'")
		assert.Contains(t, err.Error(), "sets only the sysctls the node pool allows")
		t.Logf("refused: %v", err)
		err = dry(noProbe)
		require.Error(t, err, "a Job whose app has no startup probe")
		assert.Contains(t, err.Error(), "need their exec startup probe")
		t.Logf("refused: %v", err)
		err = dry(burstable)
		require.Error(t, err, "a Job whose app requests less CPU than its limit")
		assert.Contains(t, err.Error(), "requests equal to them (Guaranteed QoS")
		t.Logf("refused: %v", err)
		assert.NoError(t, dry(job), "the rendered Job passes the same policy")
		assert.NoError(t, dry(sameQuantity), "a request equal to its limit, written in bytes")
	})

	t.Run("table-a", func(t *testing.T) {
		start := time.Now()
		shell(t, script[2:])
		t.Logf("the Jobs ran and were collected in %.0f s", time.Since(start).Seconds())
		out, err := cl.Kubectl(ctx, nil, "get", "jobs", "-n", kube.DefaultNamespace, "-l", kube.LabelSeries+"="+kubeSeries, "-o", "json")
		require.NoError(t, err)
		var jobs batchv1.JobList
		require.NoError(t, json.Unmarshal(out, &jobs))
		require.NotEmpty(t, jobs.Items)
		for _, j := range jobs.Items {
			t.Logf("%s: %d succeeded, %d failed", j.Name, j.Status.Succeeded, j.Status.Failed)
			assert.Equal(t, *j.Spec.Completions, j.Status.Succeeded, "%s's pods succeeded", j.Name)
			assert.Zero(t, j.Status.Failed, "%s's failed pods", j.Name)
		}
	})

	t.Run("same-as-docker", func(t *testing.T) {
		var merged []report.Claim
		readJSON(t, filepath.Join(base, "kube-merged", "claims.json"), &merged)
		got := map[string]report.Claim{}
		for _, c := range merged {
			got[c.ID] = c
		}
		for _, d := range docker {
			k, ok := got[d.ID]
			if !assert.True(t, ok, "%s: not in the cluster's verdicts", d.ID) {
				continue
			}
			t.Logf("%-44s docker %-7s %-10.4g kubernetes %-7s %-10.4g %s (threshold %s)", d.ID, d.Status, d.Measured, k.Status, k.Measured, d.Unit, d.Threshold)
			assert.Equal(t, d.Status, k.Status, "%s: docker %s, kubernetes %s%s", d.ID, d.Status, k.Status, noteOf(k))
		}
		var conds []report.Condition
		readJSON(t, filepath.Join(base, "kube-merged", "conditions.json"), &conds)
		for _, c := range conds {
			if assert.NotNil(t, c.RanOn, c.ID) {
				assert.Equal(t, cl.Config().Node, c.RanOn.EngineHost, "%s ran on the cluster's node", c.ID)
				assert.Equal(t, "kubernetes", c.RanOn.Engine, c.ID)
			}
		}
		page, err := os.ReadFile(filepath.Join(base, "kube-merged", "report.html"))
		require.NoError(t, err)
		assert.Contains(t, string(page), cl.Config().Node, "the page names the node")
	})
}

// testLog writes the cluster's steps to the test's log.
type testLog struct{ t *testing.T }

func (l testLog) Write(b []byte) (int, error) {
	l.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}

// manualScript is the manual's commands from make kube to make merge
// (bench/README.md's sh block), with tag for <tag> and reports/ in dir:
// make kube, then the apply of namespace.yaml, then the rest.
func manualScript(t *testing.T, tag, dir string) []string {
	root, err := moduleRoot()
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(root, "bench", "README.md"))
	require.NoError(t, err)
	const first = "\nmake kube IMAGE=wsgilab:<tag> NODES=8 TABLE=a LAB_PROFILE=ci\n"
	_, block, ok := strings.Cut(string(b), first)
	require.True(t, ok, "bench/README.md shows make kube for article A's table")
	block, _, ok = strings.Cut(first[1:]+block, "\n```")
	require.True(t, ok)
	block = strings.NewReplacer("<tag>", tag, "reports/", dir+"/", "records.jsonl", dir+"/records.jsonl").Replace(block)
	lines := strings.Split(block, "\n")
	require.True(t, strings.HasPrefix(lines[1], "kubectl apply --server-side --validate=strict -f "+dir+"/kube/namespace.yaml"), lines[1])
	require.True(t, strings.HasPrefix(lines[len(lines)-1], "make merge "), lines[len(lines)-1])
	return lines
}

// renderedJob reads the Job of a rendered manifest (its second object).
func renderedJob(t *testing.T, path string) batchv1.Job {
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	docs := strings.Split(string(b), "\n---\n")
	require.Len(t, docs, 2)
	var j batchv1.Job
	require.NoError(t, yaml.UnmarshalStrict([]byte(docs[1]), &j))
	return j
}

// importImage moves ref from Docker into the cluster's containerd (docker
// save | ctr images import).
func importImage(cl *cluster.Cluster, ref string) error {
	client, err := dc.NewClientFromEnv()
	if err != nil {
		return err
	}
	r, w := io.Pipe()
	go func() { w.CloseWithError(client.ExportImage(dc.ExportImageOptions{Name: ref, OutputStream: w})) }()
	if err := cl.ImportImage(r); err != nil {
		r.CloseWithError(err)
		return fmt.Errorf("import %s: %w", ref, err)
	}
	return nil
}
