package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/prometheus/procfs"
	"github.com/vishvananda/netlink"
)

// KubeletSysctls are the host sysctls a kubelet sets at its start (its
// protectKernelDefaults off): Stop puts back what they were before.
var KubeletSysctls = []string{"vm.overcommit_memory", "vm.panic_on_oom", "kernel.panic", "kernel.panic_on_oops", "kernel.keys.root_maxkeys", "kernel.keys.root_maxbytes"}

// ReadSysctls reads names under root (/proc/sys on a host; a fixture
// tree in a test); a name that does not exist is left out.
func ReadSysctls(root string, names []string) (map[string]string, error) {
	out := map[string]string{}
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(root, strings.ReplaceAll(n, ".", "/")))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("cluster: read sysctl %s: %w", n, err)
		}
		out[n] = strings.TrimSpace(string(b))
	}
	return out, nil
}

// WriteSysctls writes values under root, every one it can, and names
// those it could not.
func WriteSysctls(root string, values map[string]string) error {
	var errs []error
	for _, n := range slices.Sorted(maps.Keys(values)) {
		if err := os.WriteFile(filepath.Join(root, strings.ReplaceAll(n, ".", "/")), []byte(values[n]+"\n"), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("cluster: restore sysctl %s=%s: %w", n, values[n], err))
		}
	}
	return errors.Join(errs...)
}

// hostFile keeps the host's state as it was before the cluster's first
// start, until Stop has put it back: a run killed midway leaves it for the
// next Start's reaper.
func (c Config) hostFile() string {
	return filepath.Join(filepath.Dir(c.State), filepath.Base(c.State)+".host.json")
}

// hostState is what the cluster changes on the host and puts back.
type hostState struct {
	// Sysctls are the KubeletSysctls' values.
	Sysctls map[string]string `json:"sysctls"`
	// Chains are the KubeletChains that were there already (another
	// Kubernetes on the host): kept.
	Chains []string `json:"chains"`
	// Made are the KubeletPaths that were not there: removed.
	Made []string `json:"made"`
}

// KubeletPaths are the host paths a kubelet writes whatever its
// --root-dir: the device manager's socket and checkpoint, and the
// containers' log links.
var KubeletPaths = []string{"/var/lib/kubelet", "/var/log/containers"}

// saveHost records the host's state, unless an earlier run's record is
// still there (then that is the host's own state).
func (c Config) saveHost(sysRoot string, run iptablesRun) error {
	if _, err := os.Stat(c.hostFile()); err == nil {
		return nil
	}
	var h hostState
	var err error
	if h.Sysctls, err = ReadSysctls(sysRoot, KubeletSysctls); err != nil {
		return err
	}
	if h.Chains, err = kubeletChains(run); err != nil {
		return err
	}
	for _, p := range KubeletPaths {
		if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
			h.Made = append(h.Made, p)
		}
	}
	b, err := json.MarshalIndent(h, "", "  ")
	if err != nil {
		return err
	}
	tmp := c.hostFile() + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, c.hostFile())
}

// restoreHost puts the recorded sysctls back, removes the iptables chains
// the kubelet made, and then drops the record.
func (c Config) restoreHost(sysRoot string, run iptablesRun) error {
	b, err := os.ReadFile(c.hostFile())
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var h hostState
	if err := json.Unmarshal(b, &h); err != nil {
		return fmt.Errorf("cluster: %s: %w", c.hostFile(), err)
	}
	errs := []error{WriteSysctls(sysRoot, h.Sysctls), removeKubeletChains(run, h.Chains)}
	for _, p := range h.Made {
		if slices.Contains(KubeletPaths, p) { // the record's, but never another path
			errs = append(errs, os.RemoveAll(p))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return os.Remove(c.hostFile())
}

// addLink puts the node's address on a link of its own: a bridge with no
// port, so routed nowhere (a dummy link would do, but not every kernel
// has the module: this host's has none).
func (c Config) addLink() error {
	if l, err := netlink.LinkByName(Link); err == nil {
		_ = netlink.LinkDel(l)
	}
	l := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: Link}}
	if err := netlink.LinkAdd(l); err != nil {
		return fmt.Errorf("cluster: add link %s: %w", Link, err)
	}
	addr := &netlink.Addr{IPNet: &net.IPNet{IP: net.ParseIP(c.NodeIP), Mask: net.CIDRMask(32, 32)}}
	if err := netlink.AddrAdd(l, addr); err != nil {
		return fmt.Errorf("cluster: address %s on %s: %w", c.NodeIP, Link, err)
	}
	return netlink.LinkSetUp(l)
}

// delLinks removes the dummy link and the pods' bridge.
func delLinks() error {
	var errs []error
	for _, name := range []string{Link, Bridge} {
		if l, err := netlink.LinkByName(name); err == nil {
			if err := netlink.LinkDel(l); err != nil {
				errs = append(errs, fmt.Errorf("cluster: delete link %s: %w", name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// killShims kills the containerd shims serving the cluster's containerd
// (their command line names its socket): they outlive containerd.
func (c Config) killShims(procRoot string) error {
	fs, err := procfs.NewFS(procRoot)
	if err != nil {
		return err
	}
	procs, err := fs.AllProcs()
	if err != nil {
		return err
	}
	for _, p := range procs {
		cl, err := p.CmdLine()
		if err != nil || len(cl) == 0 || !strings.HasSuffix(cl[0], "containerd-shim-runc-v2") {
			continue
		}
		if slices.Contains(cl, c.sock()) {
			_ = syscall.Kill(p.PID, syscall.SIGKILL)
		}
	}
	return nil
}

// unmountAll unmounts every mount under the cluster's directories (the
// kubelet's volumes, containerd's snapshots and sandboxes), deepest
// first, lazily where one is busy.
func (c Config) unmountAll() error {
	mounts, err := procfs.GetMounts()
	if err != nil {
		return err
	}
	var under []string
	for _, m := range mounts {
		for _, d := range []string{c.State, c.Run} {
			if m.MountPoint == d || strings.HasPrefix(m.MountPoint, d+"/") {
				under = append(under, m.MountPoint)
			}
		}
	}
	slices.SortFunc(under, func(a, b string) int { return len(b) - len(a) })
	var errs []error
	for _, p := range slices.Compact(under) {
		if err := syscall.Unmount(p, 0); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
			if err := syscall.Unmount(p, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
				errs = append(errs, fmt.Errorf("cluster: unmount %s: %w", p, err))
			}
		}
	}
	return errors.Join(errs...)
}

// KubeletCgroup is the kubelet's cgroupRoot, made in every controller's
// hierarchy (cgroup v1, cgroupfs driver) before it starts: it puts its
// pods below it (kubepods/...), so the teardown removes only the
// cluster's own, never another kubelet's /kubepods.
const KubeletCgroup = "wsgilab-kube"

// MakeCgroups makes KubeletCgroup in each controller's hierarchy under
// root (/sys/fs/cgroup), with the parent's CPUs and memory nodes in
// cpuset's (a new cpuset cgroup has none).
func MakeCgroups(root string) error {
	ctrls, err := os.ReadDir(root)
	if err != nil {
		return err
	}
	for _, ctrl := range ctrls {
		if !ctrl.IsDir() {
			continue // a symlink such as cpu,cpuacct names a hierarchy listed on its own
		}
		dir := filepath.Join(root, ctrl.Name(), KubeletCgroup)
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("cluster: make cgroup %s: %w", dir, err)
		}
		if ctrl.Name() != "cpuset" {
			continue
		}
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			b, err := os.ReadFile(filepath.Join(root, ctrl.Name(), f))
			if err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
				return fmt.Errorf("cluster: %s/%s: %w", dir, f, err)
			}
		}
	}
	return nil
}

// RemoveCgroups removes KubeletCgroup and everything below it from each
// controller's hierarchy under root (/sys/fs/cgroup), deepest first; a
// cgroup that still holds a task stays, and is named.
func RemoveCgroups(root string) error {
	ctrls, err := os.ReadDir(root)
	if err != nil {
		return err
	}
	var errs []error
	for _, ctrl := range ctrls {
		top := filepath.Join(root, ctrl.Name(), KubeletCgroup)
		if _, err := os.Stat(top); err != nil {
			continue
		}
		var dirs []string
		_ = filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		slices.SortFunc(dirs, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
		for _, d := range dirs {
			if err := os.Remove(d); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, fmt.Errorf("cluster: remove cgroup %s: %w", d, err))
			}
		}
	}
	return errors.Join(errs...)
}
