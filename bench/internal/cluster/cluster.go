// Package cluster starts a single-node Kubernetes on this host from
// binaries built from upstream source (the nested module bench/cluster,
// make kube-e2e), so that the lab's rendered Jobs run on a real API
// server, Job controller, scheduler and kubelet: etcd (embedded), the
// apiserver, controller-manager and scheduler, a containerd of its own
// beside Docker's, and a kubelet, all on loopback and on a link of their
// own with no port (the node's address: a kubelet refuses a loopback one).
//
// Start refuses a bad Config or a host that lacks a part before anything
// starts, naming what is missing and how to get it; it first reaps what
// an earlier, killed run left (its processes, mounts, cgroups, links and
// the host settings it changed). Stop takes everything down and restores
// the host's sysctls the kubelet changes; it is safe to call twice.
package cluster

import (
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Defaults of a Config.
const (
	// DefaultState holds every part's state, certificates and logs.
	DefaultState = "/var/lib/wsgilab-kube"
	// DefaultRun holds the sockets.
	DefaultRun = "/run/wsgilab-kube"
	// DefaultNode is the node's name.
	DefaultNode = "wsgilab-node"
	// DefaultNodeIP is the node's address, on the link Link: an address
	// of this host's, on a bridge with no port.
	DefaultNodeIP = "10.250.0.1"
	// Link is the portless bridge that carries the node's address; Bridge the
	// pods' bridge (the CNI bridge plugin: no gateway, no masquerade).
	Link   = "wsgilab-kube0"
	Bridge = "wsgilab-cni0"
	// PodCIDR and ServiceCIDR are the cluster's ranges; nothing routes
	// them off the host.
	PodCIDR     = "10.251.0.0/24"
	ServiceCIDR = "10.252.0.0/24"
	// CNIBin is where Debian's containernetworking-plugins installs.
	CNIBin = "/usr/lib/cni"
	// CPUPeriod is the kubelet's cpuCFSQuotaPeriod: the lab's pods run at
	// a 10 ms CFS period, as under Docker (stack.KubeCPUPeriod).
	CPUPeriod = 10 * time.Millisecond
	// DefaultReadyWait bounds each part's start.
	DefaultReadyWait = 2 * time.Minute
)

// Binaries are the programs a Config's Bin must hold: built by make
// kube-e2e from bench/cluster (one Kubernetes release and its etcd).
var Binaries = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kubectl"}

// HostTools are the host's programs the cluster runs, with the Debian
// package each comes from (make kube-e2e installs them).
var HostTools = map[string]string{
	"containerd":              "containerd",
	"containerd-shim-runc-v2": "containerd",
	"ctr":                     "containerd",
	"runc":                    "runc",
	CNIBin + "/bridge":        "containernetworking-plugins",
	CNIBin + "/host-local":    "containernetworking-plugins",
	CNIBin + "/loopback":      "containernetworking-plugins",
	PauseInit:                 "tini",
	PauseBusybox:              "busybox-static",
}

// Config is a cluster's settings; the zero value of each field is its
// Default.
type Config struct {
	// Bin is the directory of Binaries; required.
	Bin string
	// State and Run are the cluster's own directories (DefaultState,
	// DefaultRun): emptied by Stop, reaped by Start.
	State, Run string
	// Node and NodeIP name the node and its address (DefaultNode,
	// DefaultNodeIP).
	Node, NodeIP string
	// UnsafeSysctls are the sysctls outside the kubelet's safe set that
	// the node allows pods to set (allowedUnsafeSysctls): the lab's
	// kube.UnsafeSysctls.
	UnsafeSysctls []string
	// Taint is the key of the NoSchedule taint the node registers with,
	// which the lab's pods tolerate (kube.Taint); empty is none.
	Taint string
	// ReadyWait bounds each part's start (DefaultReadyWait).
	ReadyWait time.Duration
	// Log receives a line per step; nil is io.Discard.
	Log io.Writer
}

func (c *Config) defaults() {
	if abs, err := filepath.Abs(c.Bin); err == nil && c.Bin != "" {
		c.Bin = abs
	}
	c.State = cmpOr(c.State, DefaultState)
	c.Run = cmpOr(c.Run, DefaultRun)
	c.Node = cmpOr(c.Node, DefaultNode)
	c.NodeIP = cmpOr(c.NodeIP, DefaultNodeIP)
	if c.ReadyWait == 0 {
		c.ReadyWait = DefaultReadyWait
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
}

func cmpOr(v, d string) string {
	if v == "" {
		return d
	}
	return v
}

// Validate is nil when c can start here, else one error naming every
// setting or part that is wrong, its value and what is accepted.
func (c Config) Validate() error {
	c.defaults()
	var errs []string
	if c.Bin == "" {
		errs = append(errs, "bin: empty; want the directory make kube-e2e built the cluster's binaries into")
	} else {
		for _, b := range Binaries {
			if err := executable(filepath.Join(c.Bin, b)); err != nil {
				errs = append(errs, fmt.Sprintf("bin %s: %v (want %s there, built by make kube-e2e)", c.Bin, err, strings.Join(Binaries, ", ")))
				break
			}
		}
	}
	for _, d := range []struct{ name, v string }{{"state", c.State}, {"run", c.Run}} {
		if !filepath.IsAbs(d.v) || filepath.Clean(d.v) == "/" || len(strings.Split(filepath.Clean(d.v), "/")) < 3 {
			errs = append(errs, fmt.Sprintf("%s %q: want an absolute directory of the cluster's own, two levels or more below /", d.name, d.v))
		}
	}
	if ip := net.ParseIP(c.NodeIP); ip == nil || ip.To4() == nil || ip.IsLoopback() || ip.IsUnspecified() {
		errs = append(errs, fmt.Sprintf("node IP %q: want an IPv4 address that is not loopback (a kubelet refuses one)", c.NodeIP))
	}
	if c.ReadyWait < 0 {
		errs = append(errs, fmt.Sprintf("ready wait %v: want above 0", c.ReadyWait))
	}
	if os.Geteuid() != 0 {
		errs = append(errs, "user: a kubelet and containerd run as root; run make kube-e2e as root")
	}
	for tool, pkg := range HostTools {
		path := tool
		if !filepath.IsAbs(tool) {
			p, err := exec.LookPath(tool)
			if err != nil {
				errs = append(errs, fmt.Sprintf("%s: not on PATH (Debian's %s; make kube-e2e installs it)", tool, pkg))
				continue
			}
			path = p
		}
		if err := executable(path); err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v (Debian's %s; make kube-e2e installs it)", tool, err, pkg))
		}
	}
	for _, p := range []string{PauseInit, PauseBusybox} {
		if f, err := elf.Open(p); err == nil {
			for _, prog := range f.Progs {
				if prog.Type == elf.PT_INTERP {
					errs = append(errs, fmt.Sprintf("%s: dynamically linked, and the pause image has no libc: want the static build (Debian's tini and busybox-static, not busybox)", p))
					break
				}
			}
			f.Close()
		}
	}
	if _, err := os.Stat(filepath.Join(CgroupRoot, "cgroup.controllers")); err == nil {
		errs = append(errs, "cgroups: this host runs cgroup v2; the cluster sets its kubelet up for cgroup v1 (cgroupfs, failCgroupV1: false) and is not tried on v2")
	}
	if len(errs) > 0 {
		slices.Sort(errs)
		return fmt.Errorf("cluster: %s", strings.Join(errs, "; "))
	}
	return nil
}

// checkHost is nil when nothing of another's is in the cluster's way:
// no kubelet runs (the host would be a node, whose device plugins'
// directory the cluster's kubelet would share) and the loopback ports are
// free. Start checks it once an earlier run of its own is reaped.
func checkHost(procRoot string) error {
	var errs []string
	if pid := otherKubelet(procRoot); pid > 0 {
		errs = append(errs, fmt.Sprintf("kubelet: one runs already (pid %d): this host is a node; the cluster's kubelet would share its device plugins' directory (/var/lib/kubelet/device-plugins)", pid))
	}
	for _, port := range []string{"2379", "2380", "10248", "10257", "10259"} {
		if l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", port)); err != nil {
			errs = append(errs, fmt.Sprintf("port 127.0.0.1:%s: taken (%v): etcd, the kubelet's health, the controller-manager and the scheduler listen on 2379, 2380, 10248, 10257 and 10259", port, err))
		} else {
			l.Close()
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("cluster: %s", strings.Join(errs, "; "))
	}
	return nil
}

// otherKubelet is the pid of a kubelet that runs on the host, 0 if none.
func otherKubelet(procRoot string) int {
	ents, _ := os.ReadDir(procRoot)
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if exe, err := os.Readlink(filepath.Join(procRoot, e.Name(), "exe")); err == nil && filepath.Base(exe) == "kubelet" {
			return pid
		}
	}
	return 0
}

func executable(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("%s: %w", path, errors.Unwrap(err))
	}
	if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", path)
	}
	return nil
}

// path is name under the state directory.
func (c Config) path(name ...string) string {
	return filepath.Join(append([]string{c.State}, name...)...)
}

// sock is containerd's socket.
func (c Config) sock() string { return filepath.Join(c.Run, "containerd.sock") }

// server is the apiserver's URL.
func (c Config) server() string { return "https://" + net.JoinHostPort(c.NodeIP, "6443") }
