package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Host roots the cluster reads and writes; fixtures stand in for them in
// tests.
const (
	SysRoot    = "/proc/sys"
	ProcRoot   = "/proc"
	CgroupRoot = "/sys/fs/cgroup"
)

// Cluster is a running single-node cluster.
type Cluster struct {
	cfg     Config
	procs   []*proc
	lock    *os.File // held from Start to Stop: one cluster per host
	mu      sync.Mutex
	stopped bool
}

// Config is the cluster's settings, defaults filled in.
func (cl *Cluster) Config() Config { return cl.cfg }

// Kubeconfig is the admin's kubeconfig (kubectl --kubeconfig).
func (cl *Cluster) Kubeconfig() string { return cl.cfg.kubeconfig("admin") }

// Start validates cfg, reaps an earlier run's leftovers, and starts the
// cluster: etcd, the apiserver, controller-manager and scheduler, a
// containerd of its own with the pause image, and the kubelet, each ready
// before the next; it returns once the node is Ready. On an error,
// everything started is stopped again.
func Start(cfg Config) (*Cluster, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.defaults()
	cl := &Cluster{cfg: cfg}
	lock, err := lockHost(cfg.State + ".lock")
	if err != nil {
		return nil, err
	}
	cl.lock = lock
	if err := cl.reap(); err != nil {
		lock.Close()
		return nil, fmt.Errorf("cluster: reaping an earlier run: %w", err)
	}
	if err := checkHost(ProcRoot); err != nil {
		lock.Close()
		return nil, err
	}
	if err := cl.up(); err != nil {
		return nil, errors.Join(err, cl.Stop())
	}
	return cl, nil
}

func (cl *Cluster) up() error {
	c := cl.cfg
	for _, d := range []string{c.State, c.Run, c.path("cni", "net.d"), c.path("kubelet")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if err := c.saveHost(SysRoot, runIptables); err != nil {
		return err
	}
	if err := c.addLink(); err != nil {
		return err
	}
	if err := c.writePKI(); err != nil {
		return err
	}
	bin := func(n string) string { return filepath.Join(c.Bin, n) }
	pki := func(n string) string { return c.path("pki", n) }

	etcd, err := cl.start("etcd", bin("etcd"), "-data-dir", c.path("etcd"))
	if err != nil {
		return err
	}
	if err := cl.waitFor(etcd, "etcd healthy", httpOK(nil, "http://127.0.0.1:2379/health")); err != nil {
		return err
	}
	api, err := cl.start("kube-apiserver", bin("kube-apiserver"),
		"--etcd-servers=http://127.0.0.1:2379",
		"--bind-address="+c.NodeIP, "--advertise-address="+c.NodeIP, "--secure-port=6443",
		"--tls-cert-file="+pki("apiserver.crt"), "--tls-private-key-file="+pki("apiserver.key"),
		"--client-ca-file="+pki("ca.crt"),
		"--kubelet-client-certificate="+pki("apiserver-kubelet-client.crt"), "--kubelet-client-key="+pki("apiserver-kubelet-client.key"),
		"--kubelet-certificate-authority="+pki("ca.crt"), "--kubelet-preferred-address-types=InternalIP",
		"--service-account-key-file="+pki("sa.pub"), "--service-account-signing-key-file="+pki("sa.key"),
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-cluster-ip-range="+ServiceCIDR,
		"--authorization-mode=Node,RBAC", "--enable-admission-plugins=NodeRestriction",
		"--profiling=false", "--v=1")
	if err != nil {
		return err
	}
	admin, err := c.adminClient()
	if err != nil {
		return err
	}
	if err := cl.waitFor(api, "apiserver ready", httpOK(admin, c.server()+"/readyz")); err != nil {
		return err
	}
	cm, err := cl.start("kube-controller-manager", bin("kube-controller-manager"),
		"--kubeconfig="+c.kubeconfig("controller-manager"), "--bind-address=127.0.0.1",
		"--authentication-kubeconfig="+c.kubeconfig("controller-manager"), "--authorization-kubeconfig="+c.kubeconfig("controller-manager"),
		"--service-account-private-key-file="+pki("sa.key"), "--root-ca-file="+pki("ca.crt"),
		"--use-service-account-credentials=true", "--leader-elect=false", "--profiling=false", "--v=1")
	if err != nil {
		return err
	}
	sched, err := cl.start("kube-scheduler", bin("kube-scheduler"),
		"--kubeconfig="+c.kubeconfig("scheduler"), "--bind-address=127.0.0.1",
		"--authentication-kubeconfig="+c.kubeconfig("scheduler"), "--authorization-kubeconfig="+c.kubeconfig("scheduler"),
		"--leader-elect=false", "--profiling=false", "--v=1")
	if err != nil {
		return err
	}
	if err := cl.waitFor(cm, "controller-manager healthy", httpOK(insecure(), "https://127.0.0.1:10257/healthz")); err != nil {
		return err
	}
	if err := cl.waitFor(sched, "scheduler healthy", httpOK(insecure(), "https://127.0.0.1:10259/healthz")); err != nil {
		return err
	}
	runc, err := c.writeRuncShim()
	if err != nil {
		return err
	}
	if runc != "" {
		fmt.Fprintf(c.Log, "cluster: root here cannot lower an OOM score (no CAP_SYS_RESOURCE): runc runs through %s, which raises the kubelet's negative ones to 0\n", runc)
	}
	for name, body := range map[string]string{
		c.path("containerd.toml"):                     c.containerdConfig(runc),
		c.path("cni", "net.d", "10-wsgilab.conflist"): c.cniConfig(),
		c.path("kubelet.yaml"):                        c.kubeletConfig(),
	} {
		if err := os.WriteFile(name, []byte(body), 0o644); err != nil {
			return err
		}
	}
	containerd, err := exec.LookPath("containerd")
	if err != nil {
		return err
	}
	ctrd, err := cl.start("containerd", containerd, "--config", c.path("containerd.toml"))
	if err != nil {
		return err
	}
	if err := cl.waitFor(ctrd, "containerd serving", func() error { _, err := cl.ctr("--timeout", "5s", "version"); return err }); err != nil {
		return err
	}
	pause, err := pauseArchive(PauseInit, PauseBusybox)
	if err != nil {
		return err
	}
	if err := cl.ImportImage(bytes.NewReader(pause)); err != nil {
		return err
	}
	if err := MakeCgroups(CgroupRoot); err != nil {
		return err
	}
	kubelet, err := cl.start("kubelet", bin("kubelet"),
		"--config="+c.path("kubelet.yaml"), "--kubeconfig="+c.kubeconfig("kubelet"),
		"--root-dir="+c.path("kubelet"), "--hostname-override="+c.Node, "--node-ip="+c.NodeIP, "--v=1")
	if err != nil {
		return err
	}
	return cl.waitFor(kubelet, "node "+c.Node+" Ready", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		out, err := cl.Kubectl(ctx, nil, "get", "node", c.Node, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
		if err != nil {
			return err
		}
		if s := strings.TrimSpace(string(out)); s != "True" {
			return fmt.Errorf("node %s Ready=%q", c.Node, s)
		}
		return nil
	})
}

// Kubectl runs the cluster's kubectl as its admin, stdin from in (nil:
// none); the error carries kubectl's stderr.
func (cl *Cluster) Kubectl(ctx context.Context, in io.Reader, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(cl.cfg.Bin, "kubectl"), append([]string{"--kubeconfig", cl.Kubeconfig()}, args...)...)
	return output(cmd, in, "kubectl", args)
}

// output runs cmd with stdin from in (nil: none) and returns its stdout;
// the error names the command as name and args, with cmd's stderr.
func output(cmd *exec.Cmd, in io.Reader, name string, args []string) ([]byte, error) {
	var stderr bytes.Buffer
	cmd.Stdin, cmd.Stderr = in, &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// ctr runs containerd's ctr on the cluster's containerd, in the
// namespace the CRI plugin uses.
func (cl *Cluster) ctr(args ...string) ([]byte, error) {
	return cl.ctrIn(nil, args...)
}

func (cl *Cluster) ctrIn(in io.Reader, args ...string) ([]byte, error) {
	cmd := exec.Command("ctr", append([]string{"--address", cl.cfg.sock(), "--namespace", "k8s.io"}, args...)...)
	return output(cmd, in, "ctr", args)
}

// ImportImage imports a `docker save` archive into the cluster's
// containerd, where the kubelet finds it without a pull
// (imagePullPolicy: Never).
func (cl *Cluster) ImportImage(archive io.Reader) error {
	_, err := cl.ctrIn(archive, "images", "import", "--snapshotter", "overlayfs", "-")
	return err
}

// Logs copies the parts' logs into dir.
func (cl *Cluster) Logs(dir string) error {
	ents, err := os.ReadDir(cl.cfg.path("logs"))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, e := range ents {
		b, err := os.ReadFile(cl.cfg.path("logs", e.Name()))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Stop takes the cluster down: the pods first, through the API (so the
// kubelet tears their sandboxes and networks down), then the kubelet,
// whatever containers are left, containerd and its shims, the control
// plane; then the mounts, cgroups, links and directories, and the host's
// sysctls back as they were. Every step runs; their errors are joined.
func (cl *Cluster) Stop() error {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if cl.stopped {
		return nil
	}
	cl.stopped = true
	var errs []error
	// The Job controller first, or it would make the deleted pods again.
	if p := cl.named("kube-controller-manager"); p != nil {
		errs = append(errs, p.stop(15*time.Second))
	}
	if p := cl.named("kubelet"); p != nil && p.exited() == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		_, err := cl.Kubectl(ctx, nil, "delete", "pods", "--all", "--all-namespaces", "--wait=true", "--timeout=80s")
		cancel()
		errs = append(errs, err)
	}
	if p := cl.named("kubelet"); p != nil {
		errs = append(errs, p.stop(15*time.Second))
	}
	if p := cl.named("containerd"); p != nil && p.exited() == nil {
		errs = append(errs, cl.removeContainers())
	}
	for _, name := range []string{"containerd", "kube-scheduler", "kube-apiserver", "etcd"} {
		if p := cl.named(name); p != nil {
			errs = append(errs, p.stop(15*time.Second))
		}
	}
	errs = append(errs, cl.cleanHost())
	if cl.lock != nil {
		errs = append(errs, cl.lock.Close())
	}
	return errors.Join(errs...)
}

// cleanHost removes what the parts leave on the host once they are
// stopped; the reaper runs it too.
func (cl *Cluster) cleanHost() error {
	c := cl.cfg
	errs := []error{c.killShims(ProcRoot), c.unmountAll(), RemoveCgroups(CgroupRoot), delLinks()}
	if err := c.restoreHost(SysRoot, runIptables); err != nil {
		errs = append(errs, err)
	}
	// The logs stay (state/logs) for a failed run to be read, until the
	// next start; what the cluster made goes, once nothing is mounted
	// there, and nothing else.
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for _, name := range stateNames {
		errs = append(errs, os.RemoveAll(c.path(name)))
	}
	for _, p := range []string{filepath.Join(c.Run, "containerd"), c.sock(), c.sock() + ".ttrpc"} {
		errs = append(errs, os.RemoveAll(p))
	}
	return errors.Join(append(errs, removeEmpty(c.Run))...)
}

// stateNames are what the cluster makes in its state directory; the
// teardown removes these and nothing else there.
var stateNames = []string{"etcd", "pki", "kubeconfig", "kubelet", "containerd", "cni", "opt", "pod-logs", "pids",
	"runc-oom-shim", "containerd.toml", "kubelet.yaml"}

// removeEmpty removes dir if it is empty or gone.
func removeEmpty(dir string) error {
	if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) && !errors.Is(err, syscall.ENOTEMPTY) && !errors.Is(err, syscall.EEXIST) {
		return err
	}
	return nil
}

// lockHost takes the host's cluster lock (an flock on path), or says
// that another run holds it.
func lockHost(path string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("cluster: another run holds %s (%v): one cluster per host", path, err)
	}
	return f, nil
}

// reap stops what an earlier run of this config left (Start, before
// anything): its processes, shims, mounts, cgroups, links, and the host
// settings it changed.
func (cl *Cluster) reap() error {
	if err := reapPids(cl.cfg.pidFile(), cl.cfg.State, 10*time.Second); err != nil {
		return err
	}
	if err := cl.cleanHost(); err != nil {
		return err
	}
	return os.RemoveAll(cl.cfg.path("logs"))
}

// removeContainers kills and removes every container left in the
// cluster's containerd (a pod the API could not delete in time).
func (cl *Cluster) removeContainers() error {
	out, err := cl.ctr("containers", "list", "--quiet")
	if err != nil {
		return err
	}
	var errs []error
	for _, id := range strings.Fields(string(out)) {
		_, _ = cl.ctr("tasks", "kill", "--signal", "SIGKILL", id)
		_, _ = cl.ctr("tasks", "delete", "--force", id)
		if _, err := cl.ctr("containers", "delete", id); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (cl *Cluster) named(name string) *proc {
	for _, p := range cl.procs {
		if p.name == name {
			return p
		}
	}
	return nil
}

// httpOK is nil when GET url answers 200.
func httpOK(client *http.Client, url string) func() error {
	if client == nil {
		client = http.DefaultClient
	}
	return func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
		}
		return nil
	}
}
