package cluster

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// capSysResource is CAP_SYS_RESOURCE's bit: the capability that lets a
// process lower an OOM score adjustment.
const capSysResource = 24

// CanLowerOOMScore is whether this process may lower an OOM score
// adjustment (CAP_SYS_RESOURCE in its effective set, read from the
// status file of /proc/self under procRoot). A kubelet gives a pod's
// sandbox -998 and a Guaranteed container -997; runc sets them, and fails
// ("can't get final child's PID from pipe") where root lacks the
// capability, as in this sandbox VM.
func CanLowerOOMScore(procRoot string) (bool, error) {
	b, err := os.ReadFile(procRoot + "/self/status")
	if err != nil {
		return false, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				return false, fmt.Errorf("cluster: CapEff %q: %w", v, err)
			}
			return caps&(1<<capSysResource) != 0, nil
		}
	}
	return false, fmt.Errorf("cluster: no CapEff in %s/self/status", procRoot)
}

// runcShim is a wrapper of runc that raises a negative OOM score
// adjustment in the bundle's config.json (runc create, run) or the
// process file (runc exec) to 0 before runc reads it: for hosts where
// root cannot lower one (CanLowerOOMScore). The OOM killer picks within
// a container's own memory cgroup when its limit is hit, where every
// process has the same adjustment either way; only a host-wide OOM would
// choose differently.
func runcShim(runc string) string {
	return fmt.Sprintf(`#!/bin/sh
# Written by wsgilab's cluster package (bench/internal/cluster/oom.go):
# root here cannot lower an OOM score adjustment, which the kubelet asks
# for; raise a negative one to 0, then run runc.
prev=
for a in "$@"; do
  case $prev in
    --bundle|-b) f="$a/config.json" ;;
    --process|-p) f="$a" ;;
    *) f= ;;
  esac
  if [ -n "$f" ] && [ -f "$f" ]; then
    sed -i -E 's/"oomScoreAdj": *-[0-9]+/"oomScoreAdj":0/' "$f"
  fi
  prev=$a
done
exec '%s' "$@"
`, strings.ReplaceAll(runc, "'", `'\''`))
}

// writeRuncShim writes runcShim for the host's runc into state, when
// root here cannot lower an OOM score; it returns the wrapper's path, or
// "" for runc itself.
func (c Config) writeRuncShim() (string, error) {
	ok, err := CanLowerOOMScore(ProcRoot)
	if err != nil || ok {
		return "", err
	}
	runc, err := exec.LookPath("runc")
	if err != nil {
		return "", err
	}
	path := c.path("runc-oom-shim")
	return path, os.WriteFile(path, []byte(runcShim(runc)), 0o755)
}
