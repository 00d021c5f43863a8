package report

import (
	"encoding/json"
	"fmt"
	"os"
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
	// Hardening is each role's container lockdown.
	Hardening map[string]podspec.Hardening `json:"hardening"`
	// Safety is the host safety stop's record: what it watched for, the
	// CPU share outside the lab it saw, and every run it aborted.
	Safety Safety `json:"safety"`
	// Resume says what a resumed series kept from an earlier process.
	Resume Resume `json:"resume"`
	// Stacks are the stack files a stack check ran, with their images.
	Stacks []StackEnv `json:"stacks,omitempty"`
	// Shard is which part of its series this directory holds (0/1: all).
	Shard Shard `json:"shard"`
	// Merged, in a report merged by labreport -merge, lists the shards it
	// was merged from, with the machine each ran on and what differed.
	Merged *Merged `json:"merged,omitempty"`
}

// Shard is which part of a series a report directory holds: LAB_SHARD.
type Shard struct {
	Index int `json:"index"`
	Count int `json:"count"`
	// Profile is LAB_PROFILE, whose table the shard's conditions are from.
	Profile string `json:"profile"`
	// Series is the series' fingerprint less the host (engine.Fingerprint's
	// SeriesHash): every shard of one series has the same.
	Series string `json:"series_fingerprint"`
	// Conditions are the ids of the table's conditions this shard owns.
	Conditions []string `json:"conditions"`
	// Attempted are those of them the shard started, whether or not a run
	// came of it: one owned but never started (a crash, a -run filter) is
	// not run, one started without a run is missing data.
	Attempted []string `json:"attempted"`
}

// Merged is a merged report's record of its shards.
type Merged struct {
	Shards []Origin `json:"shards"`
	// Mismatches are the differences between the shards' machines that
	// labreport -merge was told to allow; empty when they matched.
	Mismatches []string `json:"mismatches"`
	// Unrun are the table's conditions no shard started.
	Unrun []string `json:"unrun"`
}

// Origin is where a shard ran: its place, its report directory, and the
// machine and engine as the shard read them back.
type Origin struct {
	Shard  string `json:"shard"`
	Dir    string `json:"dir"`
	Engine string `json:"engine"`
	// EngineHost is the Docker engine's host name (docker info's Name).
	EngineHost string `json:"engine_host"`
	CPUModel   string `json:"cpu_model"`
	CPUs       int    `json:"cpus"`
	Kernel     string `json:"kernel"`
	// CgroupVersion and CPUPeriodsMicros are read back from inside the
	// shard's pods: every CFS period its runs' clients saw.
	CgroupVersion    int     `json:"cgroup_version"`
	CPUPeriodsMicros []int64 `json:"cpu_periods_us"`
	// Sysctls are the network namespace's sysctls its first run's client
	// read, less tcp_rmem and tcp_wmem, which each condition pins: what a
	// host sets (rmem_max, somaxconn, the TCP hash's size).
	Sysctls map[string]string `json:"sysctls,omitempty"`
}

// Safety is the host safety stop's record of a series.
type Safety struct {
	// Enabled is false when LAB_SAFETY_CPU=off.
	Enabled bool `json:"enabled"`
	// Threshold is the share of the host's CPU outside the lab above which
	// the stop trips once it lasted WindowS.
	Threshold float64 `json:"threshold_share"`
	WindowS   float64 `json:"window_s"`
	// Samples, MaxShare and MeanShare describe the CPU share outside the
	// lab over the series: the machine's noise.
	Samples   int     `json:"samples"`
	MaxShare  float64 `json:"max_outside_share"`
	MeanShare float64 `json:"mean_outside_share"`
	Aborts    []Abort `json:"aborts"`
	// Redo is the rule by which a run was judged disturbed and run again
	// (package disturb); nil when the stop was off.
	Redo *RedoRule `json:"redo,omitempty"`
	// TooBusy are the units the series gave up on: their conditions'
	// verdicts say "machine too busy".
	TooBusy   []TooBusy `json:"too_busy,omitempty"`
	ReadError string    `json:"read_error,omitempty"`
}

// Abort is a unit the series discarded and ran again: the safety stop
// tripped during it (Reason "safety-stop"), or the run's own figures
// said it was disturbed (Reason "disturbed", the redo rule of package
// disturb). The series waited for calm and ran it again.
type Abort struct {
	// Unit is what was discarded: "<condition> run <k>" or an article B cell.
	Unit    string `json:"unit"`
	Attempt int    `json:"attempt"`
	// Reason is "safety-stop" or "disturbed" (an abort recorded before
	// reasons existed has none: the safety stop's).
	Reason string    `json:"reason,omitempty"`
	From   time.Time `json:"from"`
	To     time.Time `json:"to"`
	// PeakShare and MeanShare are the outside share over the trip, or
	// over the discarded run's window.
	PeakShare float64 `json:"peak_outside_share"`
	MeanShare float64 `json:"mean_outside_share"`
	// Disturbances are the bounds a disturbed run crossed, each with its
	// figure; Figures the run's figures the rule reads, crossed or not.
	Disturbances []Disturbance `json:"disturbances,omitempty"`
	Figures      *RunNoise     `json:"figures,omitempty"`
	// Raw is the discarded run's raw record, relative to the report
	// directory: nothing measured is lost.
	Raw string `json:"raw,omitempty"`
	// WaitedS is how long the series then waited for calm.
	WaitedS float64 `json:"waited_s"`
}

// RedoRule is when a run counts as disturbed: its prober's worst lag
// over LagMaxMs, or its second-worst over LagSecondMs (more than the one
// request a quiet host holds back), both grown to P95Share of the run's
// /fast p95 for the requests started once the run was disarmed
// (load.LagStop), its client throttled in over
// ClientThrottledShare of its CFS periods, or its throttling reaching
// into its /fast p95 by over ClientStallReachMs and P95Share of the p95
// (ClientStall's P95ReachMs), or the
// CPU outside the lab held over OutsideShare for OutsideWindowS within its
// window, or its wall clock stepped over WallStepMs, either way, against
// the monotonic clock.
// Each bound is above what quiet series measured
// (reports/measurements.md).
type RedoRule struct {
	LagMaxMs             float64 `json:"lag_max_ms"`
	LagSecondMs          float64 `json:"lag_second_ms"`
	ClientThrottledShare float64 `json:"client_throttled_share"`
	// ClientStallReachMs is 0 in a series from before the bound.
	ClientStallReachMs float64 `json:"client_stall_reach_ms,omitempty"`
	P95Share           float64 `json:"p95_share,omitempty"`
	OutsideShare       float64 `json:"outside_share"`
	OutsideWindowS     float64 `json:"outside_window_s"`
	// WallStepMs is 0 in a series from before the bound.
	WallStepMs float64 `json:"wall_step_ms,omitempty"`
	// HiccupEveryMs is the client's hiccup meter's sleep (load.Spec.
	// HiccupEvery): its runs' stalls are charged request by request
	// (ClientStall), and LagSecondMs judges only a run without the meter's
	// record. 0 in a series from before the meter.
	HiccupEveryMs float64 `json:"hiccup_every_ms,omitempty"`
	// MaxAttempts is how often one run may be tried before the series
	// calls its machine too busy for it.
	MaxAttempts int `json:"max_attempts"`
}

// Abort reasons.
const (
	AbortSafetyStop = "safety-stop"
	AbortDisturbed  = "disturbed"
)

// Disturbance is one bound of the redo rule a run crossed.
type Disturbance struct {
	// Check is "lag", "lag-second", "client-throttled",
	// "client-stall-p95", "outside-cpu" or "wall-step".
	Check    string  `json:"check"`
	Measured float64 `json:"measured"`
	Bound    float64 `json:"bound"`
	Unit     string  `json:"unit"`
}

func (d Disturbance) String() string {
	return fmt.Sprintf("%s %.3g %s > %.3g", d.Check, d.Measured, d.Unit, d.Bound)
}

// RunNoise are the figures of a run the redo rule reads: the prober's
// worst and second-worst lag, the client's throttled share of CFS
// periods and how far its throttling or its hiccups reach into the /fast
// p95 (nil without /fast requests, or without the sampler's series and
// the meter, or without the sampler's record at all), the wall clock's step over the load,
// and the CPU outside the lab (nil when the stop was off).
type RunNoise struct {
	// LagArmed folds the lags of the requests that started while the run
	// was armed (load.ArmedLags), which the absolute lag bounds judge;
	// nil in a series from before it, whose every lag they judged.
	LagArmed *LagFold `json:"lag_armed,omitempty"`
	// FastP95Ms is the run's /fast p95, which the lag bounds grow with.
	FastP95Ms             float64      `json:"fast_p95_ms,omitempty"`
	LagMaxMs              float64      `json:"lag_max_ms"`
	LagSecondMs           float64      `json:"lag_second_ms"`
	ClientThrottledShare  float64      `json:"client_throttled_share"`
	ClientStall           *ClientStall `json:"client_stall,omitempty"`
	ClientThrottleSampled bool         `json:"client_throttle_sampled"`
	WallStepMs            float64      `json:"wall_step_ms"`
	Host                  *HostNoise   `json:"host,omitempty"`
}

// Metered says the run's client metered its hiccups (load.Spec.HiccupEvery),
// so its stalls were charged request by request (ClientStall).
func (n RunNoise) Metered() bool { return n.ClientStall != nil && n.ClientStall.Metered }

// LagFold is a worst and a second-worst lag, ms.
type LagFold struct {
	MaxMs    float64 `json:"max_ms"`
	SecondMs float64 `json:"second_ms"`
}

// TooBusy is a unit that could not get an undisturbed run in the
// attempts allowed: the machine was too busy to judge it, and every
// verdict that reads its condition says so instead of judging.
type TooBusy struct {
	Unit      string `json:"unit"`
	Condition string `json:"condition"`
	Attempts  int    `json:"attempts"`
	// Last is why the last attempt was discarded.
	Last string `json:"last"`
}

// Resume says what a series kept from the journal of an interrupted one.
type Resume struct {
	// Fingerprint is the series' fingerprint (engine.Fingerprint's hash).
	Fingerprint string `json:"fingerprint"`
	// Resumed is true when the journal held completed units of this
	// fingerprint; Kept lists them.
	Resumed bool     `json:"resumed"`
	Kept    []string `json:"kept,omitempty"`
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
	// Name is the engine's host name (docker info's Name): which machine
	// ran a shard.
	Name string `json:"name"`
}

// Versions are what the lab image really contains, read back by running it.
type Versions struct {
	Python   string `json:"python"`
	Gunicorn string `json:"gunicorn"`
	// GunicornReleases are the Gunicorn releases the image holds beside
	// the installed one (podspec.GunicornReleases: bookworm's own 20.1.0,
	// the matrix's version rows), each as it reports itself when imported
	// from its directory.
	GunicornReleases map[string]string `json:"gunicorn_releases,omitempty"`
	Nginx            string            `json:"nginx"`
	UWSGI            string            `json:"uwsgi"`
	Django           string            `json:"django"`
	Gevent           string            `json:"gevent"`
	// Uvicorn, Uvloop and Httptools serve the matrix's ASGI rows.
	Uvicorn   string `json:"uvicorn"`
	Uvloop    string `json:"uvloop"`
	Httptools string `json:"httptools"`
	// FrontDoors maps each front door's kind (proxy.Kinds) to the version
	// it prints itself (nginx 1.22.1, haproxy 2.6.12, ...).
	FrontDoors map[string]string `json:"front_doors"`
	// Packages maps every Debian package in the image to its version.
	Packages map[string]string `json:"packages"`
	// CPUModel is the processor as a container sees it (not namespaced),
	// read here so a remote engine reports its own.
	CPUModel string `json:"cpu_model"`
}

// Image is a lab image and how this series got it.
type Image struct {
	Ref string `json:"ref"`
	// ID is the image's content digest on the engine (sha256:...), where
	// it was read.
	ID       string        `json:"id,omitempty"`
	Built    bool          `json:"built"`
	Duration time.Duration `json:"duration_ns"`
	// SourcesHidden, for an image this series built, says that its
	// recipe ran with the host's /etc/apt hidden, given the Debian archive
	// Archive alone (image.BuildBase).
	SourcesHidden bool   `json:"sources_hidden,omitempty"`
	Archive       string `json:"archive,omitempty"`
	// By, when set, names the step of the same job that built the image
	// for this series, which then found it on the engine: "labimage",
	// make test's image step (image.Adopt). Empty when the series built
	// the image itself (Built) or found one built before.
	By string `json:"by,omitempty"`
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

// ImageRecord is what make test's image step (cmd/labimage) found or
// built for the series that follows it, with the base image's build
// output: that series reads it (LAB_IMAGE_RECORD) and reports the build
// as its images' (image.Adopt).
type ImageRecord struct {
	Base Image `json:"base"`
	Lab  Image `json:"lab"`
	// Log is the base image's build output; empty when it was found.
	Log string `json:"log"`
	// Versions, when set, are the lab image's components' versions as a
	// series read them: a series writes such a record for the children it
	// starts (TestShards, TestResume, TestNoLeaks), which take its images
	// and versions instead of compiling labagent to find the lab image and
	// running it to read them again.
	Versions *Versions `json:"versions,omitempty"`
}

// ReadImageRecord reads the record cmd/labimage -record wrote at path,
// naming the file and what is wrong with it.
func ReadImageRecord(path string) (ImageRecord, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return ImageRecord{}, err
	}
	var r ImageRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return ImageRecord{}, fmt.Errorf("%s is not an image record (cmd/labimage -record writes one): %w", path, err)
	}
	if r.Base.Ref == "" || r.Lab.Ref == "" {
		return ImageRecord{}, fmt.Errorf("%s: an image record names both images; this one names base %q and lab %q", path, r.Base.Ref, r.Lab.Ref)
	}
	return r, nil
}
