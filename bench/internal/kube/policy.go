package kube

import (
	"fmt"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"wsgilab/bench/internal/podspec"
)

// The sysctls every measuring pod sets (podSpec), and those of them
// outside the kubelet's safe set, which the node pool must allow
// (KubeletConfiguration allowedUnsafeSysctls). net.ipv4.tcp_rmem and
// tcp_wmem are safe from Kubernetes 1.32.
var (
	PodSysctls    = []string{"net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem", "net.ipv4.tcp_max_tw_buckets", "net.ipv4.tcp_max_syn_backlog"}
	UnsafeSysctls = PodSysctls[2:]
)

// PodSecurityLevel is the Pod Security Standard the Jobs' namespace
// enforces: privileged, because the sampler adds SYS_PTRACE (to read the
// servers' sockets and /proc through the shared process namespace) and
// the pods set two unsafe sysctls, both outside baseline. The policy
// (Policy) checks what a measurement needs of the Jobs; it is not a
// baseline of its own: the namespace is for the lab's Jobs only.
const PodSecurityLevel = "privileged"

// guaranteed is the CEL condition that container c's requests equal its
// CPU and memory limits, as quantities (1Gi is 1073741824).
const guaranteed = `has(c.resources.limits) && has(c.resources.requests) && 'cpu' in c.resources.limits && 'memory' in c.resources.limits && ` +
	`c.resources.requests.all(k, k in c.resources.limits) && ` +
	`c.resources.limits.all(k, k in c.resources.requests && quantity(string(c.resources.requests[k])).compareTo(quantity(string(c.resources.limits[k]))) == 0)`

// PolicyFile is the file labkube render writes Policy to, beside the
// Jobs' files.
const PolicyFile = "namespace.yaml"

// PolicyName names the ValidatingAdmissionPolicy and its binding.
const PolicyName = "wsgilab-measuring-jobs"

// Policy is what the Jobs' namespace needs before them: the namespace,
// labelled with PodSecurityLevel, and a ValidatingAdmissionPolicy bound
// to it that refuses, at the API server, a Job created there whose pods
// would measure something else than the lab's: a sysctl beyond
// PodSysctls, a server sidecar (app, proxy) without its exec startup probe
// (the client would start before the server listens), or a container
// without CPU and memory limits its requests equal (no Guaranteed QoS: no
// CFS quota to read back). The policy and its binding are cluster-scoped:
// applying them takes a cluster administrator. It checks Jobs only (a
// Job's template cannot change after its creation), not pods made by
// other means.
func Policy(namespace string) []any {
	ns := corev1.Namespace{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: namespace, Labels: map[string]string{
			"pod-security.kubernetes.io/enforce": PodSecurityLevel,
			"app.kubernetes.io/name":             "wsgilab",
		}},
	}
	quote := func(xs []string) string {
		q := make([]string, len(xs))
		for i, x := range xs {
			q[i] = "'" + x + "'"
		}
		return "[" + strings.Join(q, ", ") + "]"
	}
	spec := "object.spec.template.spec"
	fail := admissionv1.Fail
	vap := admissionv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: PolicyName, Labels: map[string]string{"app.kubernetes.io/name": "wsgilab"}},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Create},
					Rule:       admissionv1.Rule{APIGroups: []string{"batch"}, APIVersions: []string{"v1"}, Resources: []string{"jobs"}},
				},
			}}},
			Validations: []admissionv1.Validation{
				{
					Expression: fmt.Sprintf("!has(%[1]s.securityContext) || !has(%[1]s.securityContext.sysctls) || %[1]s.securityContext.sysctls.all(s, s.name in %[2]s)", spec, quote(PodSysctls)),
					Message:    fmt.Sprintf("a measuring pod sets only the sysctls the node pool allows: %s", strings.Join(PodSysctls, ", ")),
				},
				{
					Expression: fmt.Sprintf("!has(%[1]s.initContainers) || %[1]s.initContainers.all(c, !(c.name in %[2]s) || (has(c.startupProbe) && has(c.startupProbe.exec)))", spec, quote([]string{podspec.RoleApp, podspec.RoleProxy})),
					Message:    "the app and proxy sidecars need their exec startup probe: without it the kubelet starts the client before the server listens",
				},
				{
					Expression: fmt.Sprintf("%[1]s.containers.all(c, %[2]s) && (!has(%[1]s.initContainers) || %[1]s.initContainers.all(c, %[2]s))", spec, guaranteed),
					Message:    "every container has CPU and memory limits and requests equal to them (Guaranteed QoS: the CFS quota each run reads back)",
				},
			},
		},
	}
	binding := admissionv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: PolicyName + "-" + namespace, Labels: map[string]string{"app.kubernetes.io/name": "wsgilab"}},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        PolicyName,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
			MatchResources: &admissionv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{"kubernetes.io/metadata.name": namespace}}},
		},
	}
	return []any{ns, vap, binding}
}
