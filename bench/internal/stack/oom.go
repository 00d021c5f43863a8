package stack

import (
	"fmt"
	"strings"

	"github.com/ory/dockertest/v3"

	"wsgilab/bench/internal/podspec"
)

// OOMError says which of a pod's containers the OOM killer hit: a role
// over its memory limit is reported as such, never as a hang or a timeout.
type OOMError struct {
	// Roles are the OOM-killed roles, in pod order.
	Roles []string
	// Limits are the roles' memory limits in bytes.
	Limits map[string]int64
	Logs   string
}

func (e *OOMError) Error() string {
	var parts []string
	for _, role := range e.Roles {
		parts = append(parts, fmt.Sprintf("%s OOM-killed at its memory limit of %d MiB", role, e.Limits[role]>>20))
	}
	return "stack: " + strings.Join(parts, "; ") + "\n" + e.Logs
}

// OOMKilled reports the pod's OOM kills so far as an *OOMError, nil when
// there were none. It asks the engine, not the cgroup, so it needs no exec,
// which a container stuck at its memory limit may not be able to start:
// the session's "oom" events, and State.OOMKilled for a container that
// exited before the watch began.
func (p *Pod) OOMKilled() error {
	e := &OOMError{Limits: map[string]int64{podspec.RoleApp: p.Config.App.Memory,
		podspec.RoleProxy: p.Config.ProxyLimits.Memory, podspec.RoleClient: p.Config.Client.Memory, podspec.RoleSampler: DefaultSamplerMemory}}
	if h := p.Config.Hops; h != nil {
		e.Limits[podspec.RoleHop] = h.Limits.Memory
	}
	for _, r := range p.Roles() {
		if !p.oomKilled(r.Resource) {
			continue
		}
		e.Roles = append(e.Roles, r.Role)
		e.Logs += r.Role + " log:\n" + p.Logs(r.Resource)
	}
	if len(e.Roles) == 0 {
		return nil
	}
	return e
}

func (p *Pod) oomKilled(r *dockertest.Resource) bool {
	if p.session.sawOOM(r.Container.ID) {
		return true
	}
	c, err := p.pool.Client.InspectContainer(r.Container.ID)
	return err == nil && c.State.OOMKilled
}
