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
	"runtime"
	"time"
)

// The pause image: the sandbox every pod's containers join. It is built
// here from two static programs of Debian's packages, installed on the
// host (tini-static and busybox-static), never pulled: tini is PID 1 of
// a pod that shares its process namespace (the lab's pods do), so it
// reaps what the containers leave, and runs busybox's sleep until the
// kubelet stops the sandbox.
const (
	PauseInit    = "/usr/bin/tini-static"
	PauseBusybox = "/bin/busybox"
	// PauseRef is the image's name in containerd.
	PauseRef = "wsgilab.dev/pause:debian"
)

// pauseArchive is the pause image as a `docker save` archive (one layer:
// /pause and /busybox), which `ctr images import` reads.
func pauseArchive(initPath, busyboxPath string) ([]byte, error) {
	var layer bytes.Buffer
	tw := tar.NewWriter(&layer)
	epoch := time.Unix(0, 0)
	for _, f := range []struct{ src, name string }{{initPath, "pause"}, {busyboxPath, "busybox"}} {
		b, err := os.ReadFile(f.src)
		if err != nil {
			return nil, fmt.Errorf("cluster: the pause image's %s: %w", f.name, err)
		}
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o755, Size: int64(len(b)), ModTime: epoch, Typeflag: tar.TypeReg}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(b); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	diff := sha256.Sum256(layer.Bytes())
	config, err := json.Marshal(map[string]any{
		"architecture": runtime.GOARCH, "os": "linux", "created": epoch.UTC(),
		"config": map[string]any{"Entrypoint": []string{"/pause", "--", "/busybox", "sleep", "2147483647"}, "User": "65535:65535"},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{"sha256:" + hex.EncodeToString(diff[:])}},
	})
	if err != nil {
		return nil, err
	}
	cfgSum := sha256.Sum256(config)
	cfgName := hex.EncodeToString(cfgSum[:]) + ".json"
	manifest, err := json.Marshal([]any{map[string]any{"Config": cfgName, "RepoTags": []string{PauseRef}, "Layers": []string{"layer.tar"}}})
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	aw := tar.NewWriter(&out)
	for _, f := range []struct {
		name string
		b    []byte
	}{{cfgName, config}, {"layer.tar", layer.Bytes()}, {"manifest.json", manifest}} {
		if err := aw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.b)), ModTime: epoch, Typeflag: tar.TypeReg}); err != nil {
			return nil, err
		}
		if _, err := io.Copy(aw, bytes.NewReader(f.b)); err != nil {
			return nil, err
		}
	}
	if err := aw.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}
