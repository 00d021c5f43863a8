package report

import (
	"time"

	"wsgilab/bench/internal/image"
	"wsgilab/bench/internal/probe"
	"wsgilab/bench/internal/stack"
)

// Environment is environment.json: where and with what a series ran.
type Environment struct {
	GeneratedAt time.Time      `json:"generated_at"`
	GitCommit   string         `json:"git_commit"`
	GitDirty    bool           `json:"git_dirty"`
	GoVersion   string         `json:"go_version"`
	Docker      Docker         `json:"docker"`
	BaseImage   image.Result   `json:"base_image"`
	LabImage    image.Result   `json:"lab_image"`
	Versions    stack.Versions `json:"versions"`
	// Pod is the default pod's configuration and what its containers
	// read back from inside: limits per container, namespace sysctls.
	Pod         stack.Config                `json:"pod"`
	Inspections map[string]probe.Inspection `json:"inspections,omitempty"`
}

// Docker describes the engine.
type Docker struct {
	ServerVersion string `json:"server_version"`
	APIVersion    string `json:"api_version"`
	Kernel        string `json:"kernel"`
	OS            string `json:"os"`
	Arch          string `json:"arch"`
	NCPU          int    `json:"ncpu"`
	MemTotal      int64  `json:"mem_total_bytes"`
	StorageDriver string `json:"storage_driver"`
	CgroupDriver  string `json:"cgroup_driver"`
}
