// Package kube renders a series' condition table as Kubernetes Indexed
// Jobs: one pod per run, one run per node at a time, each pod a copy of
// the lab's Docker pod (one PID namespace, the TCP sysctls, app, NGINX and
// sampler beside the client, the same limits and lockdown). Each pod finds
// its run in the run table (a ConfigMap) by JOB_COMPLETION_INDEX; every
// container runs `labagent pod <role>`, and the client prints the run's
// raw record on stdout, for `kubectl logs` and labreport -merge.
//
// Nothing here talks to a cluster: Render returns the objects and
// WriteYAML writes them for kubectl apply.
package kube

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"wsgilab/bench/internal/engine"
	"wsgilab/bench/internal/load"
	"wsgilab/bench/internal/podrun"
	"wsgilab/bench/internal/podspec"
)

// Defaults of a rendered Job.
const (
	// DefaultNamespace is where the Jobs go unless Options say otherwise.
	DefaultNamespace = "wsgilab"
	// Taint is the key of the taint the node pool carries (NoSchedule), so
	// that nothing but the lab's pods runs beside a measurement.
	Taint = "wsgilab.dev/measure"
	// LabelMeasure marks every measuring pod, of every Job: the required
	// anti-affinity keeps two of them off one node.
	LabelMeasure = "wsgilab.dev/measure"
	// LabelSeries names the series a Job and its pods belong to.
	LabelSeries = "wsgilab.dev/series"
	// TableDir is where the run table is mounted, TableFile its file.
	TableDir  = "/etc/wsgilab"
	TableFile = "runs.json"
	// SharedDir is the pod's shared scratch volume (the app's write log,
	// the sampler's marks and series).
	SharedDir = "/run/wsgilab"
	// SamplerCPUs and SamplerMemory limit the sampler, which Docker runs
	// without a quota: Kubernetes gives a pod Guaranteed QoS only when
	// every container's requests equal its limits. Its cost is 1.5 to
	// 2 % of a core at the 50 ms period: 0.20 is 10x that.
	SamplerCPUs   = 0.20
	SamplerMemory = 256 << 20
	// MaxTableBytes is a ConfigMap's size limit.
	MaxTableBytes = 1 << 20
)

// Entry is one completion index's run in a Job's run table.
type Entry = podrun.Entry

// Options say where and how wide a series runs.
type Options struct {
	// Series names the Jobs (Series-0, Series-1, ...): a DNS label of at
	// most 50 characters.
	Series string
	// Namespace is the Jobs' namespace; empty is DefaultNamespace.
	Namespace string
	// Image is the lab image as imported on every node (ctr -n k8s.io
	// images import); it is never pulled.
	Image string
	// Nodes is the node pool's size: each Job's parallelism, at most.
	Nodes int
	// Load is a condition's load in the profile rendered (engine.Plan's
	// Load: under ci, no raw-exchange baseline); nil is Condition.Load.
	Load func(c engine.Condition, base, idPrefix string) load.Spec
}

// load is c's load as o renders it.
func (o Options) load(c engine.Condition, base, idPrefix string) load.Spec {
	if o.Load != nil {
		return o.Load(c, base, idPrefix)
	}
	return c.Load(base, idPrefix)
}

// Job is one rendered Indexed Job, its run table and the entries in it.
type Job struct {
	Job     batchv1.Job
	Table   corev1.ConfigMap
	Entries []Entry
}

// Renderable is nil when c can run as a rendered Job, else why not: a
// pod that speaks TLS needs the series' certificate in the container that
// terminates it, which the run table does not carry (Docker only: make
// test, make repro). labkube leaves such conditions out and names them.
func Renderable(c engine.Condition) error {
	if c.Path.TLS {
		return fmt.Errorf("kube: %s speaks TLS on path %s: the rendered Jobs carry no certificates yet; it runs under Docker (make test, make repro)", c.ID, c.Path.ID)
	}
	if c.Pod("renderable:only").Hops != nil {
		return fmt.Errorf("kube: %s puts a Toxiproxy hop on its path, a container the rendered pods do not have yet; it runs under Docker (make test, make repro)", c.ID)
	}
	return nil
}

// Render renders conds, runs(c) runs each, as Indexed Jobs: one per group
// of conditions whose pods differ only in what a pod's containers run (a
// pod template fixes the sysctls and the limits), completions = runs,
// parallelism = min(Nodes, runs). Bad options are refused before
// anything is rendered.
func Render(conds []engine.Condition, runs func(engine.Condition) int, o Options) ([]Job, error) {
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	if err := o.validate(len(conds)); err != nil {
		return nil, err
	}
	type group struct {
		key     string
		entries []Entry
	}
	var groups []*group
	for _, c := range conds {
		if err := c.Validate(); err != nil {
			return nil, err
		}
		if err := Renderable(c); err != nil {
			return nil, err
		}
		pod := c.Pod(o.Image)
		if pod.Server.Image != "" {
			return nil, fmt.Errorf("kube: %s runs a team's image (%s): a run pod runs the lab image's servers only; check a team's stack with make check", c.ID, pod.Server.Image)
		}
		key := shapeKey(pod)
		i := slices.IndexFunc(groups, func(g *group) bool { return g.key == key })
		if i < 0 {
			groups, i = append(groups, &group{key: key}), len(groups)
		}
		g := groups[i]
		for k := 1; k <= runs(c); k++ {
			g.entries = append(g.entries, Entry{Index: len(g.entries), Condition: c.ID, Run: k, Pod: pod,
				Load: o.load(c, pod.URL(""), fmt.Sprintf("%s-run%d", c.ID, k))})
		}
	}
	var out []Job
	for n, g := range groups {
		j, err := render(fmt.Sprintf("%s-%d", o.Series, n), g.entries, o)
		if err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	return out, nil
}

func (o Options) validate(conds int) error {
	var errs []string
	if msgs := validation.IsDNS1123Label(o.Series); len(msgs) > 0 || len(o.Series) > 50 {
		errs = append(errs, fmt.Sprintf("series %q: want a DNS label (lower-case letters, digits, '-') of at most 50 characters", o.Series))
	}
	if msgs := validation.IsDNS1123Label(o.Namespace); len(msgs) > 0 {
		errs = append(errs, fmt.Sprintf("namespace %q: want a DNS label", o.Namespace))
	}
	if o.Image == "" || strings.ContainsAny(o.Image, " \t\n") {
		errs = append(errs, fmt.Sprintf("image %q: want the lab image's reference as imported on the nodes", o.Image))
	}
	if o.Nodes < 1 {
		errs = append(errs, fmt.Sprintf("nodes %d: want the node pool's size, 1 or more", o.Nodes))
	}
	if conds == 0 {
		errs = append(errs, "no condition to render")
	}
	if len(errs) > 0 {
		return fmt.Errorf("kube: %s", strings.Join(errs, "; "))
	}
	return nil
}

// shapeKey is what a pod template fixes of pod: the sysctls, the CFS
// period and each container's limits.
func shapeKey(pod podspec.Config) string {
	b, _ := json.Marshal([]any{pod.TCPRmem, pod.TCPWmem, pod.CPUPeriod, pod.App, pod.ProxyLimits, pod.Client, pod.Proxy != nil})
	return string(b)
}

// WriteYAML writes j's run table and Job as one YAML stream.
func (j Job) WriteYAML(w io.Writer) error { return WriteYAML(w, j.Table, j.Job) }

// WriteYAML writes objs as one YAML stream, in order.
func WriteYAML(w io.Writer, objs ...any) error {
	for i, obj := range objs {
		b, err := yaml.Marshal(obj)
		if err != nil {
			return err
		}
		if i > 0 {
			if _, err := io.WriteString(w, "---\n"); err != nil {
				return err
			}
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

func render(name string, entries []Entry, o Options) (Job, error) {
	table, err := json.MarshalIndent(entries, "", " ")
	if err != nil {
		return Job{}, err
	}
	if len(table) > MaxTableBytes {
		return Job{}, fmt.Errorf("kube: %s's run table is %d bytes, over a ConfigMap's %d: split the series (fewer conditions per Job)", name, len(table), MaxTableBytes)
	}
	labels := map[string]string{LabelSeries: o.Series, "app.kubernetes.io/name": "wsgilab"}
	meta := metav1.ObjectMeta{Name: name, Namespace: o.Namespace, Labels: labels}
	j := Job{Entries: entries,
		Table: corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: meta,
			Data: map[string]string{TableFile: string(table)}},
	}
	indexed := batchv1.IndexedCompletion
	podLabels := map[string]string{LabelSeries: o.Series, LabelMeasure: "true", "app.kubernetes.io/name": "wsgilab"}
	j.Job = batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: meta,
		Spec: batchv1.JobSpec{
			CompletionMode: &indexed,
			Completions:    ptr(int32(len(entries))),
			Parallelism:    ptr(int32(min(o.Nodes, len(entries)))),
			// A failed run is not run again, and does not stop the others:
			// its record is missing, and so are the runs its verdicts read.
			BackoffLimitPerIndex: ptr(int32(0)),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels},
				Spec:       podSpec(name, entries[0].Pod, o),
			},
		},
	}
	return j, nil
}

func ptr[T any](v T) *T { return &v }

// cpu is n cores as a quantity in millicores.
func cpu(n float64) resource.Quantity {
	return *resource.NewMilliQuantity(int64(n*1000+0.5), resource.DecimalSI)
}

func mem(n int64) resource.Quantity { return *resource.NewQuantity(n, resource.BinarySI) }
