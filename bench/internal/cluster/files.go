package cluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"path/filepath"

	"wsgilab/bench/internal/tlsca"
)

// identity is a component's client certificate: the user (CN) and groups
// (O) the apiserver's RBAC reads, and the names it serves when it serves.
type identity struct {
	file, user string
	groups     []string
	serves     bool
}

// identities are the cluster's client certificates: each part as the
// bootstrap RBAC roles name it, the kubelet as its node (the Node
// authorizer), the admin (kubectl) and the apiserver to its kubelets as
// system:masters.
func (c Config) identities() []identity {
	return []identity{
		{file: "apiserver", user: "kube-apiserver", serves: true},
		{file: "apiserver-kubelet-client", user: "kube-apiserver-kubelet-client", groups: []string{"system:masters"}},
		{file: "controller-manager", user: "system:kube-controller-manager"},
		{file: "scheduler", user: "system:kube-scheduler"},
		{file: "kubelet", user: "system:node:" + c.Node, groups: []string{"system:nodes"}, serves: true},
		{file: "admin", user: "wsgilab-admin", groups: []string{"system:masters"}},
	}
}

// writePKI makes the cluster's certificates at start (a CA of its own,
// valid a day) and the service accounts' signing key, in state/pki.
func (c Config) writePKI() error {
	dir := c.path("pki")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	names := []string{c.NodeIP, "127.0.0.1", "10.252.0.1", c.Node, "localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"}
	ca, err := tlsca.New(tlsca.DefaultValidity, names...)
	if err != nil {
		return err
	}
	files := map[string][]byte{"ca.crt": ca.CertPEM}
	for _, id := range c.identities() {
		var serve []string
		if id.serves {
			serve = names
		}
		cert, key, err := ca.Issue(id.user, id.groups, serve...)
		if err != nil {
			return err
		}
		files[id.file+".crt"], files[id.file+".key"] = cert, key
	}
	sa, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	der, err := x509.MarshalPKCS8PrivateKey(sa)
	if err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(&sa.PublicKey)
	if err != nil {
		return err
	}
	files["sa.key"] = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	files["sa.pub"] = pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			return err
		}
	}
	for _, id := range c.identities() {
		if id.file == "apiserver" || id.file == "apiserver-kubelet-client" {
			continue
		}
		if err := c.writeKubeconfig(id.file, files["ca.crt"], files[id.file+".crt"], files[id.file+".key"]); err != nil {
			return err
		}
	}
	return nil
}

// kubeconfig is id's kubeconfig file.
func (c Config) kubeconfig(id string) string { return c.path("kubeconfig", id+".yaml") }

// writeKubeconfig writes a kubeconfig for the apiserver with the
// certificates embedded (JSON is YAML).
func (c Config) writeKubeconfig(id string, caPEM, cert, key []byte) error {
	b64 := base64.StdEncoding.EncodeToString
	kc := map[string]any{
		"apiVersion": "v1", "kind": "Config", "current-context": "wsgilab",
		"clusters": []any{map[string]any{"name": "wsgilab", "cluster": map[string]any{
			"server": c.server(), "certificate-authority-data": b64(caPEM)}}},
		"users": []any{map[string]any{"name": id, "user": map[string]any{
			"client-certificate-data": b64(cert), "client-key-data": b64(key)}}},
		"contexts": []any{map[string]any{"name": "wsgilab", "context": map[string]any{"cluster": "wsgilab", "user": id}}},
	}
	b, err := json.MarshalIndent(kc, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(c.kubeconfig(id)), 0o700); err != nil {
		return err
	}
	return os.WriteFile(c.kubeconfig(id), b, 0o600)
}

// containerdConfig is containerd's config.toml: its own root, state and
// socket beside Docker's containerd, the CRI plugin with the pause image
// built here, runc through cgroupfs (the kubelet's driver on this host's
// cgroup v1) or through runcBin (runc's path, or a wrapper of it; empty is
// runc on PATH), and the CNI bridge; no registry is reached (images are
// imported, pods never pull).
func (c Config) containerdConfig(runcBin string) string {
	binary := ""
	if runcBin != "" {
		binary = fmt.Sprintf("\n        BinaryName = %q", runcBin)
	}
	return fmt.Sprintf(`version = 2
root = %q
state = %q

[grpc]
  address = %q

[ttrpc]
  address = "%s.ttrpc"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false%s
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %q
    conf_dir = %q

[plugins."io.containerd.internal.v1.opt"]
  path = %q
`, c.path("containerd"), filepath.Join(c.Run, "containerd"), c.sock(), c.sock(), PauseRef, binary, CNIBin, c.path("cni", "net.d"), c.path("opt"))
}

// cniConfig is the pods' network: a bridge with no gateway and no
// masquerade, addresses from PodCIDR, its IPAM state in state/cni.
func (c Config) cniConfig() string {
	b, _ := json.MarshalIndent(map[string]any{
		"cniVersion": "0.4.0", "name": "wsgilab",
		"plugins": []any{map[string]any{
			"type": "bridge", "bridge": Bridge, "isGateway": false, "ipMasq": false,
			"ipam": map[string]any{"type": "host-local", "ranges": []any{[]any{map[string]string{"subnet": PodCIDR}}},
				"dataDir": c.path("cni", "ipam")},
		}},
	}, "", "  ")
	return string(b)
}

// kubeletConfig is the kubelet's KubeletConfiguration: what a node pool
// running the lab's Jobs needs (the 10 ms CFS period, the unsafe sysctls
// allowed, the taint), and what this host needs (cgroup v1 through
// cgroupfs, serving on the node's address only, no image garbage
// collection of the imported images).
func (c Config) kubeletConfig() string {
	cfg := map[string]any{
		"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
		"address": c.NodeIP, "port": 10250, "readOnlyPort": 0,
		"healthzBindAddress": "127.0.0.1", "healthzPort": 10248,
		"tlsCertFile": c.path("pki", "kubelet.crt"), "tlsPrivateKeyFile": c.path("pki", "kubelet.key"),
		"authentication": map[string]any{
			"anonymous": map[string]any{"enabled": false},
			"webhook":   map[string]any{"enabled": true},
			"x509":      map[string]any{"clientCAFile": c.path("pki", "ca.crt")},
		},
		"authorization":               map[string]any{"mode": "Webhook"},
		"containerRuntimeEndpoint":    "unix://" + c.sock(),
		"cgroupDriver":                "cgroupfs",
		"cgroupRoot":                  "/" + KubeletCgroup,
		"failCgroupV1":                false,
		"failSwapOn":                  false,
		"featureGates":                map[string]bool{"CustomCPUCFSQuotaPeriod": true},
		"cpuCFSQuotaPeriod":           CPUPeriod.String(),
		"allowedUnsafeSysctls":        c.UnsafeSysctls,
		"podLogsDir":                  c.path("pod-logs"),
		"imageGCHighThresholdPercent": 100,
		"imageGCLowThresholdPercent":  99,
		"evictionHard":                map[string]string{"memory.available": "200Mi", "nodefs.available": "2%", "imagefs.available": "2%"},
		"serializeImagePulls":         false,
		"resolvConf":                  "",
		"maxPods":                     16,
	}
	if c.Taint != "" {
		cfg["registerWithTaints"] = []any{map[string]string{"key": c.Taint, "effect": "NoSchedule"}}
	}
	b, _ := json.MarshalIndent(cfg, "", "  ")
	return string(b)
}

// adminClient is an HTTPS client with the admin's certificate, trusting
// only the cluster's CA.
func (c Config) adminClient() (*http.Client, error) {
	cert, err := tls.LoadX509KeyPair(c.path("pki", "admin.crt"), c.path("pki", "admin.key"))
	if err != nil {
		return nil, err
	}
	caPEM, err := os.ReadFile(c.path("pki", "ca.crt"))
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{
		Certificates: []tls.Certificate{cert}, RootCAs: pool, MinVersion: tls.VersionTLS12}}}, nil
}

// insecure is an HTTPS client for the controller-manager's and the
// scheduler's health endpoints on loopback, which serve certificates they
// made themselves.
func insecure() *http.Client {
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // loopback health checks only
}
