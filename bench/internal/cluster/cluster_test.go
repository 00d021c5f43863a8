package cluster

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestValidate: a bad setting is refused before anything starts, each
// named with its value and what is accepted.
func TestValidate(t *testing.T) {
	err := Config{Bin: t.TempDir(), State: "/", Run: "relative", NodeIP: "127.0.0.1"}.Validate()
	require.Error(t, err)
	for _, want := range []string{
		"/etcd: no such file or directory (want etcd, kube-apiserver",
		`state "/": want an absolute directory of the cluster's own`,
		`run "relative": want an absolute directory`,
		`node IP "127.0.0.1": want an IPv4 address that is not loopback`,
	} {
		assert.Contains(t, err.Error(), want)
	}
	err = Config{}.Validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "bin: empty; want the directory make kube-e2e built")

	bin := t.TempDir()
	for _, b := range Binaries {
		require.NoError(t, os.WriteFile(filepath.Join(bin, b), []byte("#!/bin/sh\n"), 0o755))
	}
	require.NoError(t, os.Chmod(filepath.Join(bin, "kubelet"), 0o644))
	err = Config{Bin: bin}.Validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "kubelet is not an executable file")
}

// TestSysctlsRestored: the kubelet's sysctls are recorded before the
// first start and put back by the stop, from a fixture /proc/sys; a
// record left by a killed run is the host's own state, not overwritten.
func TestSysctlsRestored(t *testing.T) {
	sys := t.TempDir()
	write := func(name, v string) {
		p := filepath.Join(sys, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(v+"\n"), 0o644))
	}
	write("vm/overcommit_memory", "0")
	write("kernel/panic", "0")
	write("kernel/panic_on_oops", "0")
	c := Config{State: filepath.Join(t.TempDir(), "state")}
	ipt := &fakeIptables{rules: map[string][]string{}}
	// The kubelet's own host paths: one there before (kept), one not
	// (made by the kubelet: removed).
	paths := t.TempDir()
	had, made := filepath.Join(paths, "had"), filepath.Join(paths, "made")
	require.NoError(t, os.MkdirAll(had, 0o755))
	defer func(p []string) { KubeletPaths = p }(KubeletPaths)
	KubeletPaths = []string{had, made}
	require.NoError(t, c.saveHost(sys, ipt.run))
	require.NoError(t, os.MkdirAll(filepath.Join(made, "device-plugins"), 0o755))
	// The kubelet's changes.
	write("vm/overcommit_memory", "1")
	write("kernel/panic", "10")
	// A second start before a stop (a killed run) keeps the first record.
	require.NoError(t, c.saveHost(sys, ipt.run))
	write("kernel/panic_on_oops", "1")
	require.NoError(t, c.restoreHost(sys, ipt.run))
	got, err := ReadSysctls(sys, KubeletSysctls)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"vm.overcommit_memory": "0", "kernel.panic": "0", "kernel.panic_on_oops": "0"}, got,
		"the sysctls the fixture lacks are left out")
	assert.NoFileExists(t, c.hostFile())
	assert.DirExists(t, had)
	assert.NoDirExists(t, made)
	assert.NoError(t, c.restoreHost(sys, ipt.run), "a second restore has nothing to do")

	require.NoError(t, os.Chmod(filepath.Join(sys, "kernel"), 0o555))
	defer os.Chmod(filepath.Join(sys, "kernel"), 0o755)
	if os.Geteuid() != 0 {
		err := WriteSysctls(sys, map[string]string{"kernel.nosuch": "1"})
		assert.ErrorContains(t, err, "restore sysctl kernel.nosuch=1")
	}
}

// TestRemoveCgroups: the kubelet's hierarchy goes from every controller
// of a fixture cgroup root, deepest first; the rest stays.
func TestRemoveCgroups(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"cpu/wsgilab-kube/kubepods/besteffort/pod1/c1", "memory/wsgilab-kube/kubepods/burstable", "memory/kubepods/another", "memory/docker/abc", "pids"} {
		require.NoError(t, os.MkdirAll(filepath.Join(root, d), 0o755))
	}
	require.NoError(t, RemoveCgroups(root))
	assert.NoDirExists(t, filepath.Join(root, "cpu", KubeletCgroup))
	assert.NoDirExists(t, filepath.Join(root, "memory", KubeletCgroup))
	assert.DirExists(t, filepath.Join(root, "memory", "docker", "abc"))
	assert.DirExists(t, filepath.Join(root, "memory", "kubepods", "another"), "another kubelet's")
	assert.DirExists(t, filepath.Join(root, "pids"))

	// A cgroup that holds a task (here: a file) is named, not forced.
	require.NoError(t, os.MkdirAll(filepath.Join(root, "cpu/wsgilab-kube/pod2"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "cpu/wsgilab-kube/pod2/tasks"), []byte("42\n"), 0o644))
	assert.ErrorContains(t, RemoveCgroups(root), "remove cgroup "+filepath.Join(root, "cpu/wsgilab-kube/pod2"))

	// Made in every hierarchy; cpuset's with its parent's CPUs.
	fresh := t.TempDir()
	for _, d := range []string{"cpu", "cpuset", "memory"} {
		require.NoError(t, os.MkdirAll(filepath.Join(fresh, d), 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(fresh, "cpuset", "cpuset.cpus"), []byte("0-1\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(fresh, "cpuset", "cpuset.mems"), []byte("0\n"), 0o644))
	require.NoError(t, MakeCgroups(fresh))
	assert.DirExists(t, filepath.Join(fresh, "memory", KubeletCgroup))
	b, err := os.ReadFile(filepath.Join(fresh, "cpuset", KubeletCgroup, "cpuset.cpus"))
	require.NoError(t, err)
	assert.Equal(t, "0-1\n", string(b))
}

// TestPauseArchive: the pause image is a docker-save archive whose
// config names its one layer by the layer's digest and runs tini over
// busybox's sleep as nobody, the two files of the host's packages inside.
func TestPauseArchive(t *testing.T) {
	dir := t.TempDir()
	initPath, bbPath := filepath.Join(dir, "tini"), filepath.Join(dir, "busybox")
	require.NoError(t, os.WriteFile(initPath, []byte("tini"), 0o755))
	require.NoError(t, os.WriteFile(bbPath, []byte("busybox"), 0o755))
	b, err := pauseArchive(initPath, bbPath)
	require.NoError(t, err)
	files := untar(t, b)
	var manifest []struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	require.NoError(t, json.Unmarshal(files["manifest.json"], &manifest))
	require.Len(t, manifest, 1)
	assert.Equal(t, []string{PauseRef}, manifest[0].RepoTags)
	var cfg struct {
		Config struct {
			Entrypoint []string
			User       string
		}
		RootFS struct {
			DiffIDs []string `json:"diff_ids"`
		} `json:"rootfs"`
	}
	require.NoError(t, json.Unmarshal(files[manifest[0].Config], &cfg))
	sum := sha256.Sum256(files[manifest[0].Layers[0]])
	assert.Equal(t, []string{"sha256:" + hex.EncodeToString(sum[:])}, cfg.RootFS.DiffIDs)
	assert.Equal(t, []string{"/pause", "--", "/busybox", "sleep", "2147483647"}, cfg.Config.Entrypoint)
	layer := untar(t, files[manifest[0].Layers[0]])
	assert.Equal(t, "tini", string(layer["pause"]))
	assert.Equal(t, "busybox", string(layer["busybox"]))

	_, err = pauseArchive(filepath.Join(dir, "nosuch"), bbPath)
	assert.ErrorContains(t, err, "the pause image's pause")
}

func untar(t *testing.T, b []byte) map[string][]byte {
	out := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		require.NoError(t, err)
		out[h.Name], err = io.ReadAll(tr)
		require.NoError(t, err)
	}
}

// TestKubeletConfig: the node settings the lab's Jobs need, and this
// host's, are in the kubelet's configuration.
func TestKubeletConfig(t *testing.T) {
	c := Config{UnsafeSysctls: []string{"net.ipv4.tcp_max_tw_buckets"}, Taint: "wsgilab.dev/measure"}
	c.defaults()
	var cfg map[string]any
	require.NoError(t, json.Unmarshal([]byte(c.kubeletConfig()), &cfg))
	assert.Equal(t, "10ms", cfg["cpuCFSQuotaPeriod"])
	assert.Equal(t, map[string]any{"CustomCPUCFSQuotaPeriod": true}, cfg["featureGates"])
	assert.Equal(t, []any{"net.ipv4.tcp_max_tw_buckets"}, cfg["allowedUnsafeSysctls"])
	assert.Equal(t, []any{map[string]any{"key": "wsgilab.dev/measure", "effect": "NoSchedule"}}, cfg["registerWithTaints"])
	assert.Equal(t, "cgroupfs", cfg["cgroupDriver"])
	assert.Equal(t, false, cfg["failCgroupV1"])
	assert.Equal(t, DefaultNodeIP, cfg["address"], "the kubelet serves on the node's address only")
	var cni map[string]any
	require.NoError(t, json.Unmarshal([]byte(c.cniConfig()), &cni))
	plugin := cni["plugins"].([]any)[0].(map[string]any)
	assert.Equal(t, false, plugin["ipMasq"])
	assert.Equal(t, false, plugin["isGateway"])
	assert.Contains(t, c.containerdConfig(""), `address = "/run/wsgilab-kube/containerd.sock"`)
	assert.Contains(t, c.containerdConfig(""), `sandbox_image = "`+PauseRef+`"`)
	assert.NotContains(t, c.containerdConfig(""), "BinaryName")
	assert.Contains(t, c.containerdConfig("/x/shim"), "SystemdCgroup = false\n        BinaryName = \"/x/shim\"")
}

// fakeIptables keeps each command and table's rules as iptables -S
// prints them, and applies -D, -F and -X to them.
type fakeIptables struct {
	rules map[string][]string // "iptables/filter" -> lines
	calls []string
}

func (f *fakeIptables) run(cmd string, args ...string) ([]byte, error) {
	key := cmd + "/" + args[1]
	f.calls = append(f.calls, cmd+" "+strings.Join(args, " "))
	lines := f.rules[key]
	switch args[2] {
	case "-S":
		return []byte(strings.Join(lines, "\n") + "\n"), nil
	case "-D":
		rule := "-A " + strings.Join(args[3:], " ")
		i := slices.Index(lines, rule)
		if i < 0 {
			return nil, fmt.Errorf("no rule %q", rule)
		}
		f.rules[key] = slices.Delete(lines, i, i+1)
	case "-F":
		f.rules[key] = slices.DeleteFunc(lines, func(l string) bool { return strings.HasPrefix(l, "-A "+args[3]+" ") })
	case "-X":
		f.rules[key] = slices.DeleteFunc(lines, func(l string) bool { return l == "-N "+args[3] })
	}
	return nil, nil
}

// TestKubeletChainsRemoved: the chains the kubelet made go, with the
// rules jumping to them; the host's own rules and a chain that was there
// before the start stay.
func TestKubeletChainsRemoved(t *testing.T) {
	ipt := &fakeIptables{rules: map[string][]string{
		"ip6tables/mangle": {"-P PREROUTING ACCEPT", "-N KUBE-IPTABLES-HINT"},
	}}
	before, err := kubeletChains(ipt.run)
	require.NoError(t, err)
	assert.Equal(t, []string{"ip6tables/mangle/KUBE-IPTABLES-HINT"}, before)
	// What a kubelet adds.
	ipt.rules["iptables/filter"] = []string{"-P INPUT ACCEPT", "-N DOCKER", "-N KUBE-FIREWALL", "-N KUBE-KUBELET-CANARY",
		"-A INPUT -j KUBE-FIREWALL", "-A OUTPUT -j KUBE-FIREWALL", "-A FORWARD -j DOCKER",
		`-A KUBE-FIREWALL ! -s 127.0.0.0/8 -d 127.0.0.0/8 -m comment --comment "block incoming localnet connections" -m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT -j DROP`}
	ipt.rules["iptables/mangle"] = []string{"-N KUBE-IPTABLES-HINT", "-N KUBE-KUBELET-CANARY"}
	require.NoError(t, removeKubeletChains(ipt.run, before))
	assert.Equal(t, []string{"-P INPUT ACCEPT", "-N DOCKER", "-A FORWARD -j DOCKER"}, ipt.rules["iptables/filter"])
	assert.Empty(t, ipt.rules["iptables/mangle"])
	assert.Equal(t, []string{"-P PREROUTING ACCEPT", "-N KUBE-IPTABLES-HINT"}, ipt.rules["ip6tables/mangle"], "there before: kept")
	assert.Equal(t, []string{"-m", "comment", "--comment", "block incoming localnet connections", "-j", "DROP"},
		splitRule(`-m comment --comment "block incoming localnet connections" -j DROP`))
}

// TestRuncShim: the wrapper raises a negative OOM score adjustment in a
// bundle's config.json and in an exec's process file to 0, leaves a
// positive one, and runs runc with the arguments it was given.
func TestRuncShim(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "runc")
	require.NoError(t, os.WriteFile(fake, []byte("#!/bin/sh\necho \"$@\" > \"$(dirname \"$0\")/args\"\n"), 0o755))
	shim := filepath.Join(dir, "shim")
	require.NoError(t, os.WriteFile(shim, []byte(runcShim(fake)), 0o755))
	bundle := filepath.Join(dir, "bundle")
	require.NoError(t, os.MkdirAll(bundle, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(bundle, "config.json"), []byte(`{"process":{"oomScoreAdj":-998,"args":["/pause"]}}`), 0o644))
	proc := filepath.Join(dir, "process.json")
	require.NoError(t, os.WriteFile(proc, []byte(`{"oomScoreAdj": -997}`), 0o644))
	run := func(args ...string) {
		out, err := exec.Command(shim, args...).CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	run("--root", "/r", "create", "--bundle", bundle, "id1")
	b, _ := os.ReadFile(filepath.Join(bundle, "config.json"))
	assert.Equal(t, `{"process":{"oomScoreAdj":0,"args":["/pause"]}}`, string(b))
	args, _ := os.ReadFile(filepath.Join(dir, "args"))
	assert.Equal(t, "--root /r create --bundle "+bundle+" id1\n", string(args))
	run("exec", "--process", proc, "id1")
	b, _ = os.ReadFile(proc)
	assert.Equal(t, `{"oomScoreAdj":0}`, string(b))
	require.NoError(t, os.WriteFile(proc, []byte(`{"oomScoreAdj":500}`), 0o644))
	run("exec", "-p", proc, "id1")
	b, _ = os.ReadFile(proc)
	assert.Equal(t, `{"oomScoreAdj":500}`, string(b), "a positive one is the kubelet's own choice: kept")

	ok, err := CanLowerOOMScore(ProcRoot)
	require.NoError(t, err)
	t.Logf("this process may lower an OOM score: %v", ok)
	status := filepath.Join(dir, "proc", "self")
	require.NoError(t, os.MkdirAll(status, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(status, "status"), []byte("Name:\tx\nCapEff:\t000001fffeffffff\n"), 0o644))
	ok, err = CanLowerOOMScore(filepath.Join(dir, "proc"))
	require.NoError(t, err)
	assert.False(t, ok, "bit 24 clear")
	require.NoError(t, os.WriteFile(filepath.Join(status, "status"), []byte("CapEff:\t000001ffffffffff\n"), 0o644))
	ok, err = CanLowerOOMScore(filepath.Join(dir, "proc"))
	require.NoError(t, err)
	assert.True(t, ok)
}

// TestCheckHost: a kubelet that runs already is named (a fixture /proc
// whose process's exe is a kubelet).
func TestCheckHost(t *testing.T) {
	proc := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(proc, "4242"), 0o755))
	require.NoError(t, os.Symlink("/usr/local/bin/kubelet", filepath.Join(proc, "4242", "exe")))
	require.NoError(t, os.MkdirAll(filepath.Join(proc, "77"), 0o755))
	require.NoError(t, os.Symlink("/usr/bin/containerd", filepath.Join(proc, "77", "exe")))
	assert.Equal(t, 4242, otherKubelet(proc))
	err := checkHost(proc)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "kubelet: one runs already (pid 4242): this host is a node")
	assert.Zero(t, otherKubelet(t.TempDir()))
}
