package report

import (
	"time"

	"wsgilab/bench/internal/podspec"
	"wsgilab/bench/internal/probe"
)

// Environment is environment.json: where and with what a series ran.
type Environment struct {
	GeneratedAt time.Time `json:"generated_at"`
	GitCommit   string    `json:"git_commit"`
	GitDirty    bool      `json:"git_dirty"`
	GoVersion   string    `json:"go_version"`
	Docker      Docker    `json:"docker"`
	BaseImage   Image     `json:"base_image"`
	LabImage    Image     `json:"lab_image"`
	Versions    Versions  `json:"versions"`
	// Pod is the default pod's configuration and what its containers
	// read back from inside: limits per container, namespace sysctls.
	Pod         podspec.Config              `json:"pod"`
	Inspections map[string]probe.Inspection `json:"inspections,omitempty"`
	// Machine is what could disturb the series, read before it started.
	Machine Machine `json:"machine"`
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

// Versions are what the lab image really contains, read back by running it.
type Versions struct {
	Python   string `json:"python"`
	Gunicorn string `json:"gunicorn"`
	Nginx    string `json:"nginx"`
	UWSGI    string `json:"uwsgi"`
	Django   string `json:"django"`
	Gevent   string `json:"gevent"`
	// Packages maps every Debian package in the image to its version.
	Packages map[string]string `json:"packages"`
	// CPUModel is the processor as a container sees it (not namespaced),
	// read here so a remote engine reports its own.
	CPUModel string `json:"cpu_model"`
}

// Image is a lab image and how this series got it.
type Image struct {
	Ref      string        `json:"ref"`
	Built    bool          `json:"built"`
	Duration time.Duration `json:"duration_ns"`
}

// Machine is what could disturb a series, read before it starts.
type Machine struct {
	CPUModel string `json:"cpu_model"`
	CPUs     int    `json:"cpus"`
	// BusyShare and StealShare are the host's CPU time spent busy (user,
	// nice, system, interrupts) and stolen by the hypervisor, as shares of
	// all CPU time over WindowS, while the lab ran nothing.
	WindowS    float64 `json:"window_s"`
	BusyShare  float64 `json:"busy_share"`
	StealShare float64 `json:"steal_share"`
	LoadAvg1   float64 `json:"load_avg_1"`
	// CalibrationMBps is one core's SHA-256 speed, MB/s.
	CalibrationMBps float64 `json:"calibration_mb_per_s"`
	// Busy, when set, says why the machine was not quiet: the series'
	// verdicts are shown with that warning.
	Busy string `json:"busy,omitempty"`
}
