package stack

import (
	"archive/tar"
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ory/dockertest/v3"
	dc "github.com/ory/dockertest/v3/docker"
	corev1 "k8s.io/api/core/v1"

	"wsgilab/bench/internal/image"
)

// KubeCPUPeriod is the CFS period KubePod gives every container: the
// kubelet's cpuCFSQuotaPeriod the node pool must set (10ms).
const KubeCPUPeriod = 10 * time.Millisecond

// KubePodNode is the node name KubePod gives a pod's spec.nodeName.
const KubePodNode = "kubepod-docker"

// DefaultKubePodWait bounds a KubePod's client.
const DefaultKubePodWait = 5 * time.Minute

// KubePod runs a rendered Kubernetes pod on the Docker engine as a
// kubelet would, so a test shows that a rendered Job's pod carries out its
// run with no cluster: a holder (the pause container) owns the network,
// PID and IPC namespaces and the pod's sysctls; every volume is a tmpfs
// Docker volume, a ConfigMap's filled with files[volume]; the native
// sidecars (init containers with restartPolicy Always) start in order,
// each after its startup probe passed, probed every periodSeconds; then
// the one regular container runs to its end. Each container gets its
// command, environment (and env, and spec.nodeName through the downward
// API as KubePodNode), mounts, user, capabilities, read-only root and its
// limits at KubeCPUPeriod. It returns the regular container's stdout; a non-zero
// exit is an error with its stderr. Everything is purged by t's cleanup.
func KubePod(t TB, s *Session, spec corev1.PodSpec, files map[string]map[string]string, env []string, id Ident) ([]byte, error) {
	t.Helper()
	if len(spec.Containers) != 1 {
		return nil, fmt.Errorf("stack: KubePod runs pods of one regular container, not %d", len(spec.Containers))
	}
	pool := s.pool
	vols := map[string]string{} // pod volume -> Docker volume
	for _, v := range spec.Volumes {
		name := s.name("vol-"+v.Name, id.Condition, id.Run)
		size := int64(16 << 20)
		if v.EmptyDir != nil && v.EmptyDir.SizeLimit != nil {
			size = v.EmptyDir.SizeLimit.Value()
		}
		removeVolume := func(string) { pool.Client.RemoveVolumeWithOptions(dc.RemoveVolumeOptions{Name: name, Force: true}) }
		if _, err := s.create("volume "+name, func() (string, error) {
			_, err := pool.Client.CreateVolume(dc.CreateVolumeOptions{Name: name, Driver: "local",
				Labels:     s.labels("volume", id.Condition, id.Run),
				DriverOpts: map[string]string{"type": "tmpfs", "device": "tmpfs", "o": fmt.Sprintf("size=%d,uid=65534,gid=65534", size)}})
			return name, err
		}, removeVolume); err != nil {
			return nil, err
		}
		t.Cleanup(func() { removeVolume(name) })
		vols[v.Name] = name
	}
	repo, tag := image.SplitRef(spec.Containers[0].Image)
	pod := &Pod{Ident: id, session: s, pool: pool} // for its removal and its guarded Exec
	run := func(role string, opts *dockertest.RunOptions, mods ...func(*dc.HostConfig)) (*dockertest.Resource, error) {
		opts.Repository, opts.Tag = repo, tag
		opts.Labels, opts.Name = s.labels(role, id.Condition, id.Run), s.name(role, id.Condition, id.Run)
		var r *dockertest.Resource
		if _, err := s.create(role+" container of "+id.String(), func() (string, error) {
			var err error
			r, err = pool.RunWithOptions(opts, append(mods, func(hc *dc.HostConfig) {
				hc.PublishAllPorts = false // no port leaves the pod
				hc.SecurityOpt = append(hc.SecurityOpt, "no-new-privileges:true")
				hc.CapDrop = []string{"ALL"}
			})...)
			if err != nil {
				return "", fmt.Errorf("stack: start %s container: %w", role, err)
			}
			return r.Container.ID, nil
		}, func(id string) { removeContainer(pool.Client, id) }); err != nil {
			return nil, err
		}
		s.live.Store(r.Container.ID, true) // the lab's own, to the safety stop
		t.Cleanup(func() {
			if err := pod.remove(r); err != nil {
				t.Errorf("stack: purge %s: %v", r.Container.Name, err)
			}
		})
		return r, nil
	}

	sysctls := map[string]string{}
	if sc := spec.SecurityContext; sc != nil {
		for _, x := range sc.Sysctls {
			sysctls[x.Name] = x.Value
		}
	}
	holder, err := run("pause", &dockertest.RunOptions{Cmd: []string{"sleep", "infinity"}, User: "65534:65534"}, func(hc *dc.HostConfig) {
		hc.NetworkMode, hc.IpcMode, hc.Init, hc.ReadonlyRootfs, hc.Sysctls = "none", "shareable", true, true, sysctls
		for pv, dv := range vols {
			hc.Mounts = append(hc.Mounts, dc.HostMount{Type: "volume", Source: dv, Target: "/vol/" + pv})
		}
	})
	if err != nil {
		return nil, err
	}
	for vol, fs := range files {
		if err := upload(pool, holder, "/vol/"+vol, fs); err != nil {
			return nil, fmt.Errorf("stack: fill volume %s: %w", vol, err)
		}
	}

	start := func(c corev1.Container) (*dockertest.Resource, error) {
		opts := &dockertest.RunOptions{Entrypoint: c.Command, Cmd: c.Args, Env: env}
		for _, e := range c.Env {
			v := e.Value
			if f := e.ValueFrom; f != nil {
				// The one field the lab's pods read through the downward
				// API: the node's name, as a kubelet resolves it.
				if f.FieldRef == nil || f.FieldRef.FieldPath != "spec.nodeName" {
					return nil, fmt.Errorf("stack: KubePod resolves only the downward API's spec.nodeName, not %s's source", e.Name)
				}
				v = KubePodNode
			}
			opts.Env = append(opts.Env, e.Name+"="+v)
		}
		mods := []func(*dc.HostConfig){func(hc *dc.HostConfig) {
			join := "container:" + holder.Container.ID
			hc.NetworkMode, hc.PidMode, hc.IpcMode = join, join, join
			for _, m := range c.VolumeMounts {
				hc.Mounts = append(hc.Mounts, dc.HostMount{Type: "volume", Source: vols[m.Name], Target: m.MountPath, ReadOnly: m.ReadOnly})
			}
			period := KubeCPUPeriod.Microseconds()
			cpu, mem := c.Resources.Limits[corev1.ResourceCPU], c.Resources.Limits[corev1.ResourceMemory]
			hc.CPUPeriod, hc.CPUQuota = period, cpu.MilliValue()*period/1000
			hc.Memory, hc.MemorySwap = mem.Value(), mem.Value()
		}}
		if sc := c.SecurityContext; sc != nil {
			if sc.RunAsUser != nil {
				opts.User = strconv.FormatInt(*sc.RunAsUser, 10)
				if sc.RunAsGroup != nil {
					opts.User += ":" + strconv.FormatInt(*sc.RunAsGroup, 10)
				}
			}
			mods = append(mods, func(hc *dc.HostConfig) {
				hc.ReadonlyRootfs = sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem
				if sc.Capabilities != nil {
					for _, a := range sc.Capabilities.Add {
						hc.CapAdd = append(hc.CapAdd, string(a))
					}
				}
			})
		}
		r, err := run(c.Name, opts, mods...)
		if err != nil || c.StartupProbe == nil || c.StartupProbe.Exec == nil {
			return r, err
		}
		// As a kubelet probes: the first try once the container has
		// started, then one every periodSeconds, up to failureThreshold
		// failures (make kube-e2e: a real kubelet started each sidecar a
		// probe period after the one before, not at once).
		p := c.StartupProbe
		period := time.Duration(max(p.PeriodSeconds, 1)) * time.Second
		for failures := int32(1); ; failures++ {
			_, err := pod.Exec(r, p.Exec.Command...)
			if err == nil {
				return r, nil
			}
			if failures >= max(p.FailureThreshold, 1) {
				return r, fmt.Errorf("stack: %s's startup probe failed %d times: %w", c.Name, failures, err)
			}
			time.Sleep(period)
		}
	}
	for _, c := range spec.InitContainers {
		if c.RestartPolicy == nil || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways {
			return nil, fmt.Errorf("stack: KubePod runs native sidecars only; %s is a plain init container", c.Name)
		}
		if _, err := start(c); err != nil {
			return nil, err
		}
	}
	client, err := start(spec.Containers[0])
	if err != nil {
		return nil, err
	}
	ctx, cancel := contextWithTimeout(DefaultKubePodWait)
	defer cancel()
	code, err := pool.Client.WaitContainerWithContext(client.Container.ID, ctx)
	if err != nil {
		return nil, err
	}
	var stdout, stderr bytes.Buffer
	if err := pool.Client.Logs(dc.LogsOptions{Container: client.Container.ID, OutputStream: &stdout, ErrorStream: &stderr, Stdout: true, Stderr: true}); err != nil {
		return nil, err
	}
	if code != 0 {
		return stdout.Bytes(), fmt.Errorf("stack: %s exited %d: %s", spec.Containers[0].Name, code, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

// upload writes files (name -> content) into dir of r, owned by nobody:
// a tar stream, as a kubelet fills a ConfigMap volume.
func upload(pool *dockertest.Pool, r *dockertest.Resource, dir string, files map[string]string) error {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		body := files[name]
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Uid: 65534, Gid: 65534}); err != nil {
			return err
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	ctx, cancel := contextWithTimeout(DefaultExecWait)
	defer cancel()
	return pool.Client.UploadToContainer(r.Container.ID, dc.UploadToContainerOptions{Context: ctx, InputStream: &b, Path: dir})
}
