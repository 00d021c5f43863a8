package kube

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"wsgilab/bench/internal/engine"
	"wsgilab/bench/internal/podspec"
)

// TestPolicy: namespace.yaml decodes strictly as the API server's types;
// the namespace enforces PodSecurityLevel; the policy is bound to it
// alone, refuses (Deny) Jobs at creation, and every Job the lab renders
// meets what it checks: its sysctls are PodSysctls, its server sidecars
// carry exec startup probes, its requests equal its CPU and memory
// limits. make kube-e2e shows a real API server refusing what breaks it.
func TestPolicy(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, WriteYAML(&b, Policy("lab")...))
	docs := strings.Split(b.String(), "\n---\n")
	require.Len(t, docs, 3)
	var ns corev1.Namespace
	var vap admissionv1.ValidatingAdmissionPolicy
	var bind admissionv1.ValidatingAdmissionPolicyBinding
	require.NoError(t, yaml.UnmarshalStrict([]byte(docs[0]), &ns))
	require.NoError(t, yaml.UnmarshalStrict([]byte(docs[1]), &vap))
	require.NoError(t, yaml.UnmarshalStrict([]byte(docs[2]), &bind))
	assert.Equal(t, "lab", ns.Name)
	assert.Equal(t, PodSecurityLevel, ns.Labels["pod-security.kubernetes.io/enforce"])
	assert.Equal(t, PolicyName, bind.Spec.PolicyName)
	assert.Equal(t, []admissionv1.ValidationAction{admissionv1.Deny}, bind.Spec.ValidationActions)
	assert.Equal(t, map[string]string{"kubernetes.io/metadata.name": "lab"}, bind.Spec.MatchResources.NamespaceSelector.MatchLabels)
	rule := vap.Spec.MatchConstraints.ResourceRules[0]
	assert.Equal(t, []string{"jobs"}, rule.Resources)
	assert.Equal(t, []admissionv1.OperationType{admissionv1.Create}, rule.Operations)
	require.Len(t, vap.Spec.Validations, 3)
	for _, v := range vap.Spec.Validations {
		assert.NotEmpty(t, v.Message)
	}

	jobs, err := Render(engine.ArticleA, func(engine.Condition) int { return 1 }, opts)
	require.NoError(t, err)
	for _, j := range jobs {
		spec := j.Job.Spec.Template.Spec
		for _, s := range spec.SecurityContext.Sysctls {
			assert.Contains(t, PodSysctls, s.Name, "%s sets a sysctl the policy refuses", j.Job.Name)
		}
		for _, c := range append(slices.Clone(spec.InitContainers), spec.Containers...) {
			if c.Name == podspec.RoleApp || c.Name == podspec.RoleProxy {
				require.NotNil(t, c.StartupProbe, "%s's %s", j.Job.Name, c.Name)
				assert.NotNil(t, c.StartupProbe.Exec, "%s's %s", j.Job.Name, c.Name)
			}
			for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				l, q := c.Resources.Limits[r], c.Resources.Requests[r]
				assert.False(t, l.IsZero(), "%s's %s has a %s limit", j.Job.Name, c.Name, r)
				assert.Zero(t, l.Cmp(q), "%s's %s: %s requests equal limits", j.Job.Name, c.Name, r)
			}
		}
	}
}
