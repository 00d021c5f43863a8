package stack

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/ory/dockertest/v3"
	dc "github.com/ory/dockertest/v3/docker"

	"wsgilab/bench/internal/podspec"
)

// Harden applies role's podspec.DefaultHardening to opts: its user (unless
// opts names one), the capabilities it keeps and no-new-privileges. An unknown role is
// hardened as the strictest one (nobody, no capability).
func Harden(role string, opts *dockertest.RunOptions) *dockertest.RunOptions {
	h := hardening(role)
	o := *opts
	// An explicit user (a team's image's, from its stack file) stays;
	// every other container runs as its role's.
	if o.User == "" {
		o.User = h.User
	}
	o.CapAdd = slices.Clone(h.CapAdd)
	o.SecurityOpt = append(slices.Clone(opts.SecurityOpt), "no-new-privileges:true")
	return &o
}

// HardenHost applies the rest of role's hardening to the host config: all
// capabilities dropped (CapAdd gives back the kept ones), a read-only root
// filesystem with its tmpfs paths, its pids limit and the lab's
// open-file limit (podspec.OpenFiles).
func HardenHost(role string) func(*dc.HostConfig) {
	h := hardening(role)
	return func(hc *dc.HostConfig) {
		hc.CapDrop = []string{"ALL"}
		hc.Ulimits = []dc.ULimit{{Name: "nofile", Soft: podspec.OpenFiles, Hard: podspec.OpenFiles}}
		hc.ReadonlyRootfs = true
		hc.Tmpfs = maps.Clone(h.Tmpfs)
		hc.PidsLimit = h.PidsLimit
	}
}

// explainStart names the cause of a container that could not start for
// its open-file limit: the daemon's own is below podspec.OpenFiles.
func explainStart(err error) error {
	if err != nil && strings.Contains(err.Error(), "setting rlimit") {
		return fmt.Errorf("the Docker daemon cannot give a container %d open files (podspec.OpenFiles): its own hard limit is lower; raise dockerd's LimitNOFILE to at least %d: %w",
			podspec.OpenFiles, podspec.OpenFiles, err)
	}
	return err
}

func hardening(role string) podspec.Hardening {
	if h, ok := podspec.DefaultHardening[role]; ok {
		return h
	}
	return podspec.Hardening{User: podspec.Nobody, PidsLimit: 16} // room for an exec: runc's init threads count
}

// RoleResource is one of a pod's containers and its role.
type RoleResource struct {
	Role     string
	Resource *dockertest.Resource
}

// Roles lists the pod's containers, the client (which holds the
// namespaces) first.
func (p *Pod) Roles() []RoleResource {
	var out []RoleResource
	for _, r := range []RoleResource{{podspec.RoleClient, p.Client}, {podspec.RoleApp, p.App}, {podspec.RoleProxy, p.Proxy},
		{podspec.RoleSampler, p.Sampler}, {podspec.RoleHop, p.Hop}} {
		if r.Resource != nil {
			out = append(out, r)
		}
	}
	return out
}
