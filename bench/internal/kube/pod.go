package kube

import (
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"wsgilab/bench/internal/image"
	"wsgilab/bench/internal/podrun"
	"wsgilab/bench/internal/podspec"
)

// Volume names of the pod.
const (
	volTable  = "run-table"
	volShared = "shared"
)

// podSpec is the pod of every run of a Job, whose entries share pod's
// sysctls and limits: the lab's Docker pod (package stack) in Kubernetes'
// terms. The pause container holds the namespaces, as stack's client
// container does; app, NGINX and the sampler are native sidecars, started
// in that order, each ready before the next; the client is the one
// container the pod's completion waits for.
func podSpec(table string, pod podspec.Config, o Options) corev1.PodSpec {
	always := corev1.ContainerRestartPolicyAlways
	spec := corev1.PodSpec{
		RestartPolicy:                 corev1.RestartPolicyNever,
		ShareProcessNamespace:         ptr(true),
		EnableServiceLinks:            ptr(false),
		AutomountServiceAccountToken:  ptr(false),
		TerminationGracePeriodSeconds: ptr(int64(5)),
		SecurityContext: &corev1.PodSecurityContext{
			Sysctls: []corev1.Sysctl{
				{Name: PodSysctls[0], Value: pod.TCPRmem},
				{Name: PodSysctls[1], Value: pod.TCPWmem},
				{Name: PodSysctls[2], Value: strconv.Itoa(podspec.TCPMaxTWBuckets)},
				{Name: PodSysctls[3], Value: strconv.Itoa(podspec.TCPMaxSynBacklog)},
			},
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{LabelMeasure: "true"}},
				TopologyKey:   "kubernetes.io/hostname",
			}},
		}},
		Tolerations: []corev1.Toleration{{Key: Taint, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
		Volumes: []corev1.Volume{
			{Name: volTable, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: table}}}},
			{Name: volShared, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
				Medium: corev1.StorageMediumMemory, SizeLimit: ptr(mem(16 << 20))}}},
		},
	}
	app := container(podspec.RoleApp, pod.App, o, &spec)
	app.RestartPolicy, app.StartupProbe = &always, readyProbe(podspec.RoleApp, pod.ReadyWait.Seconds())
	spec.InitContainers = append(spec.InitContainers, app)
	if pod.Proxy != nil {
		proxy := container(podspec.RoleProxy, pod.ProxyLimits, o, &spec)
		proxy.RestartPolicy, proxy.StartupProbe = &always, readyProbe(podspec.RoleProxy, pod.ReadyWait.Seconds())
		spec.InitContainers = append(spec.InitContainers, proxy)
	}
	sampler := container(podspec.RoleSampler, podspec.Limits{CPUs: SamplerCPUs, Memory: SamplerMemory}, o, &spec)
	sampler.RestartPolicy = &always
	spec.InitContainers = append(spec.InitContainers, sampler)
	spec.Containers = []corev1.Container{container(podspec.RoleClient, pod.Client, o, &spec)}
	return spec
}

// container is role's container: `labagent pod <role>` on the run table,
// requests equal to limits (Guaranteed QoS), and role's lockdown
// (podspec.DefaultHardening), its tmpfs paths as memory-backed emptyDirs
// added to spec.
func container(role string, l podspec.Limits, o Options, spec *corev1.PodSpec) corev1.Container {
	h := podspec.DefaultHardening[role]
	res := corev1.ResourceList{corev1.ResourceCPU: cpu(l.CPUs), corev1.ResourceMemory: mem(l.Memory)}
	c := corev1.Container{
		Name: role, Image: o.Image, ImagePullPolicy: corev1.PullNever,
		Command: []string{image.AgentPath, "pod", role},
		Env: []corev1.EnvVar{
			{Name: podrun.EnvRole, Value: role},
			{Name: podrun.EnvTable, Value: TableDir + "/" + TableFile},
			{Name: podrun.EnvShared, Value: SharedDir},
			{Name: podrun.EnvNode, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
		},
		Resources: corev1.ResourceRequirements{Requests: res, Limits: res.DeepCopy()},
		VolumeMounts: []corev1.VolumeMount{
			{Name: volTable, MountPath: TableDir, ReadOnly: true},
			{Name: volShared, MountPath: SharedDir},
		},
		SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr(false),
			ReadOnlyRootFilesystem:   ptr(true),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		},
	}
	for _, a := range h.CapAdd {
		c.SecurityContext.Capabilities.Add = append(c.SecurityContext.Capabilities.Add, corev1.Capability(a))
	}
	if uid, gid, ok := ids(h.User); ok {
		c.SecurityContext.RunAsUser, c.SecurityContext.RunAsGroup, c.SecurityContext.RunAsNonRoot = &uid, &gid, ptr(true)
	} else {
		c.SecurityContext.RunAsUser = ptr(int64(0)) // Kubernetes, like Docker, gives added capabilities to root only
	}
	paths := make([]string, 0, len(h.Tmpfs))
	for p := range h.Tmpfs {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for i, p := range paths {
		name := role + "-tmp" + strconv.Itoa(i)
		spec.Volumes = append(spec.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
			Medium: corev1.StorageMediumMemory, SizeLimit: ptr(mem(tmpfsSize(h.Tmpfs[p])))}}})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: name, MountPath: p})
	}
	return c
}

// readyProbe holds the next sidecar until role answers, as stack's
// readiness wait does: an exec, since the servers listen on loopback,
// where the kubelet's own probes do not reach.
func readyProbe(role string, waitS float64) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:     corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{image.AgentPath, "pod", "ready", role}}},
		PeriodSeconds:    1,
		TimeoutSeconds:   2,
		FailureThreshold: int32(max(waitS, 1)),
	}
}

// ids reads "uid:gid".
func ids(user string) (uid, gid int64, ok bool) {
	u, g, found := strings.Cut(user, ":")
	a, errA := strconv.ParseInt(u, 10, 64)
	b, errB := strconv.ParseInt(g, 10, 64)
	return a, b, found && errA == nil && errB == nil && a != 0
}

// tmpfsSize reads size=Nm from Docker's tmpfs options, in bytes; 16 MiB
// when they set none.
func tmpfsSize(opts string) int64 {
	for _, o := range strings.Split(opts, ",") {
		if v, ok := strings.CutPrefix(o, "size="); ok {
			if n, err := strconv.ParseInt(strings.TrimSuffix(v, "m"), 10, 64); err == nil {
				return n << 20
			}
		}
	}
	return 16 << 20
}
