package report

import (
	"slices"
	"strconv"
	"strings"
)

// Matrix is the resilience matrix, matrix.json: server setups (rows) by
// slow-client behaviours (columns) on each path, each cell's measured
// outcome and its class, and each row's capacity.
type Matrix struct {
	// ProtectedMs and StalledMs are the /fast p95 thresholds of the
	// classes: protected under ProtectedMs (with nothing failed), stalled
	// over StalledMs.
	ProtectedMs float64        `json:"protected_ms"`
	StalledMs   float64        `json:"stalled_ms"`
	Columns     []MatrixColumn `json:"columns"`
	Rows        []MatrixRow    `json:"rows"`
	Cells       []MatrixCell   `json:"cells"`
	// Streams is the streaming table: one event stream through each of
	// its paths.
	Streams []StreamCell `json:"streams"`
	// Limits are the connection-limit cells: a setup with a connection
	// limit moved, under silent connections, read against Against (the
	// same setup at its default).
	Limits []LimitCell `json:"limits,omitempty"`
	// Frameworks are the framework cells against their twins: what
	// Flask, Django or FastAPI cost on /fast under the same server,
	// column and path as the framework-free app.
	Frameworks []FrameworkCost `json:"frameworks,omitempty"`
	// Versions are the version cells against their twins: the same
	// Gunicorn server, column and path under bookworm's own Gunicorn
	// (20.1.0) and under the installed one (23.0.0).
	Versions []VersionCell `json:"versions,omitempty"`
}

// VersionCell is one version cell (Condition: a Gunicorn row run by
// Release) beside its twin (TwinCondition: the same row under the
// installed Gunicorn), with each side's class and /fast p95, the median
// over its valid runs and every valid run's value.
type VersionCell struct {
	Release       string    `json:"release"`
	Row           string    `json:"row"`
	Twin          string    `json:"twin"`
	Column        string    `json:"column"`
	Path          string    `json:"path"`
	Condition     string    `json:"condition"`
	TwinCondition string    `json:"twin_condition"`
	Class         string    `json:"class"`
	TwinClass     string    `json:"twin_class"`
	P95Ms         float64   `json:"p95_ms"`
	TwinP95Ms     float64   `json:"twin_p95_ms"`
	P95MsRuns     []float64 `json:"p95_ms_runs"`
	TwinP95MsRuns []float64 `json:"twin_p95_ms_runs"`
}

// FrameworkCost is one framework cell (Condition) beside its twin
// (TwinCondition): the same server, slow clients and path serving the
// framework-free app. The /fast figures are medians over each side's
// valid runs, with every valid run's value; the cost is the framework's
// median less the twin's.
type FrameworkCost struct {
	Framework     string `json:"framework"`
	Row           string `json:"row"`
	Twin          string `json:"twin"`
	Column        string `json:"column"`
	Path          string `json:"path"`
	Condition     string `json:"condition"`
	TwinCondition string `json:"twin_condition"`
	Class         string `json:"class"`
	TwinClass     string `json:"twin_class"`
	// P50Ms and P95Ms are the framework cell's, TwinP50Ms and TwinP95Ms
	// its twin's; *Runs each valid run's.
	P50Ms         float64   `json:"p50_ms"`
	TwinP50Ms     float64   `json:"twin_p50_ms"`
	P95Ms         float64   `json:"p95_ms"`
	TwinP95Ms     float64   `json:"twin_p95_ms"`
	P50MsRuns     []float64 `json:"p50_ms_runs"`
	TwinP50MsRuns []float64 `json:"twin_p50_ms_runs"`
	P95MsRuns     []float64 `json:"p95_ms_runs"`
	TwinP95MsRuns []float64 `json:"twin_p95_ms_runs"`
	// CostP50Ms and CostP95Ms are P50Ms less TwinP50Ms and P95Ms less
	// TwinP95Ms.
	CostP50Ms float64 `json:"cost_p50_ms"`
	CostP95Ms float64 `json:"cost_p95_ms"`
}

// LimitCell is one connection-limit cell's outcome.
type LimitCell struct {
	Condition string  `json:"condition"`
	Moved     string  `json:"moved"`
	Against   string  `json:"against"`
	Class     string  `json:"class"`
	P95Ms     float64 `json:"p95_ms"`
	RunsSound int     `json:"runs_sound"`
	RunsTotal int     `json:"runs_total"`
	// RequestsFailed of RequestsTotal /fast requests failed over the
	// sound runs; SlowOutcomes counts the silent connections' outcomes;
	// ConnectMsMax is their slowest connect.
	RequestsFailed int            `json:"requests_failed"`
	RequestsTotal  int            `json:"requests_total"`
	SlowOutcomes   map[string]int `json:"slow_outcomes,omitempty"`
	ConnectMsMax   float64        `json:"connect_ms_max"`
}

// StreamCell is one condition of the streaming table.
type StreamCell struct {
	Condition string `json:"condition"`
	// Path is how the reader reached the app; XAccelNo says the app sent
	// X-Accel-Buffering: no.
	Path     string `json:"path"`
	XAccelNo bool   `json:"xaccel_no"`
	// RunsSound and RunsTotal count its runs; Stream is over the sound
	// ones.
	RunsSound int     `json:"runs_sound"`
	RunsTotal int     `json:"runs_total"`
	Stream    *Stream `json:"stream"`
}

// The classes of a matrix cell or capacity step.
const (
	// ClassProtected: /fast p95 under ProtectedMs, no failed request and
	// every slow client served as its kind expects.
	ClassProtected = "protected"
	// ClassSlowed: nothing failed, /fast p95 between the two thresholds.
	ClassSlowed = "slowed"
	// ClassStalled: nothing failed, /fast p95 over StalledMs.
	ClassStalled = "stalled"
	// ClassFailed: a /fast request failed or a slow client was not served
	// whole (truncated, reset, timed out).
	ClassFailed = "failed"
	// ClassNoData: no sound run.
	ClassNoData = "no-data"
)

// ClassColors are each class's colour where a matrix is drawn at a
// glance: the report page's overview and reports/matrix.svg.
var ClassColors = map[string]string{
	ClassProtected: "#c8e6c9",
	ClassSlowed:    "#ffe082",
	ClassStalled:   "#ef9a9a",
	ClassFailed:    "#ce93d8",
	ClassNoData:    "#e0e0e0",
}

// ShortMs is a p95 in ms in a narrow cell, about three digits: 1.98,
// 36.4, 5,978.
func ShortMs(v float64) string {
	switch {
	case v >= 100:
		return Thousands(v)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

// Thousands is v rounded to a whole number, its thousands separated by
// commas: 5,978, 1,234,567.
func Thousands(v float64) string {
	s := strconv.FormatFloat(v, 'f', 0, 64)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

// MatrixColumn is one slow-client behaviour.
type MatrixColumn struct {
	ID   string `json:"id"`
	Text string `json:"text"`
	// Clients is how many slow clients each cell runs.
	Clients int `json:"clients"`
	// Paths are the paths the column runs on, and Rows the rows it
	// applies to.
	Paths []string `json:"paths"`
	Rows  []string `json:"rows"`
	// Only, when it names a path, are the only rows that path runs
	// (engine.Column.Only); a path it does not name runs every row.
	Only map[string][]string `json:"only,omitempty"`
}

// Runs is whether the column runs row on path: a (row, path) it does not
// is left out by design, never "no data".
func (c MatrixColumn) Runs(row, path string) bool {
	if len(c.Rows) > 0 && !slices.Contains(c.Rows, row) {
		return false
	}
	rows, ok := c.Only[path]
	return !ok || slices.Contains(rows, row)
}

// MatrixRow is one server setup.
type MatrixRow struct {
	ID string `json:"id"`
	// Family is the row's group on the page: its server's family
	// (Gunicorn, Uvicorn, uWSGI, ...) or its framework's; rows come
	// grouped by it.
	Family string `json:"family,omitempty"`
	// Only, when set, are the only columns the row runs: a server added
	// for one protocol's column (engine.Row.Only); Paths the only paths.
	Only  []string `json:"only,omitempty"`
	Paths []string `json:"paths,omitempty"`
	// Framework, for a framework row, is the framework its app is
	// written in, and Twin the row of the same server serving the
	// framework-free app. Gunicorn, for a version row, is the Gunicorn
	// release it runs, and Twin the same row under the installed one.
	Framework string `json:"framework,omitempty"`
	Gunicorn  string `json:"gunicorn,omitempty"`
	Twin      string `json:"twin,omitempty"`
	// Cmd is the server's command line.
	Cmd string `json:"cmd"`
	// Concurrency is what the command line declares (0: no limit at or
	// under StepLimit), and Basis where that comes from.
	Concurrency int    `json:"concurrency"`
	Basis       string `json:"basis"`
	// Capacity per column, where the series stepped it.
	Capacity []Capacity `json:"capacity"`
	// Stack is true for a stack check's row (make check): a team's
	// server, stepped on its own path, with no cell of the matrix.
	Stack bool `json:"stack,omitempty"`
}

// MatrixCell is one row on one path under one column.
type MatrixCell struct {
	Row    string `json:"row"`
	Column string `json:"column"`
	Path   string `json:"path"`
	// Condition is the condition measuring it (article A's where the cell
	// is one of its own), and SlowKind its slow clients' kind ("" a slow
	// download; upload, headers, silent).
	Condition string `json:"condition"`
	SlowKind  string `json:"slow_kind,omitempty"`
	Class     string `json:"class"`
	// Fault names the fault on the cell's path (a fault column's), and
	// Cut what a fault that cuts did and left, the worst of its sound
	// runs: such a cell has no valid run, its clients cut on purpose.
	Fault string `json:"fault,omitempty"`
	Cut   *Cut   `json:"cut,omitempty"`
	// RunsSound and RunsTotal count its runs; figures come from its valid
	// runs (sound, nothing failed), counts from its sound runs.
	RunsSound int `json:"runs_sound"`
	RunsTotal int `json:"runs_total"`
	// P95Ms is the median of the runs' /fast p95, with its range and the
	// runs' values; MaxMs the median of the runs' slowest /fast.
	P95Ms     float64   `json:"p95_ms"`
	P95MsMin  float64   `json:"p95_ms_min"`
	P95MsMax  float64   `json:"p95_ms_max"`
	P95MsRuns []float64 `json:"p95_ms_runs"`
	MaxMs     float64   `json:"max_ms"`
	// P95MsH2 is the same median over /fast's HTTP/2 series, on a path
	// whose entry point speaks HTTP/2 (nil elsewhere), P95MsH2Runs each
	// valid run's; the class and the verdicts read the HTTP/1.1 series.
	P95MsH2     *float64  `json:"p95_ms_h2,omitempty"`
	P95MsH2Runs []float64 `json:"p95_ms_h2_runs,omitempty"`
	// RequestsFailed of RequestsTotal /fast requests failed;
	// RequestsFailedH2 of RequestsTotalH2 of its HTTP/2 series.
	RequestsFailedH2 int `json:"requests_failed_h2,omitempty"`
	RequestsTotalH2  int `json:"requests_total_h2,omitempty"`
	RequestsFailed   int `json:"requests_failed"`
	RequestsTotal    int `json:"requests_total"`
	// SlowClients counts the slow clients by outcome (complete,
	// truncated, reset, timeout, refused, status; a held connection's
	// held or closed); SlowClientS is their
	// median time to the end of the exchange and SlowClientSMax the
	// longest.
	SlowClients    map[string]int `json:"slow_clients"`
	SlowClientS    float64        `json:"slow_client_s"`
	SlowClientSMax float64        `json:"slow_client_s_max"`
	// WriteS is the median of the app's write times: how long a response
	// held the server (an upload's: how long reading its body did).
	WriteS float64 `json:"write_s"`
	// WorkerTimeouts counts Gunicorn's worker timeouts in the sound runs.
	WorkerTimeouts int `json:"worker_timeouts"`
	// Waits are the app workers' wait sites (syscall/wchan) by share of
	// samples over every worker and valid run, largest first; SendShareMax
	// is the most blocked worker's share in a socket send (median over
	// runs).
	Waits        []SiteShare `json:"waits"`
	SendShareMax *float64    `json:"send_share_max"`
	// WorkersHeld of Workers are the app workers a client held for at
	// least a quarter of the window, waiting to write to it (a blocking
	// send, or uWSGI's poll for its socket), of those the sampler saw
	// (medians over valid runs; Observed.AppWorkersHeld). Behind a front
	// door they are the upstream workers its clients held.
	WorkersHeld *float64 `json:"workers_held,omitempty"`
	Workers     *float64 `json:"workers,omitempty"`
	// AcceptQueuePeak is the most connections that waited at once to be
	// accepted (median over valid runs): /fast requests no worker took.
	AcceptQueuePeak *float64 `json:"accept_queue_peak"`
	// AppThrottledShare is the app's share of CFS periods throttled
	// (median over valid runs): a server short of CPU, not of workers.
	AppThrottledShare float64 `json:"app_throttled_share"`
	// ProxyMemoryPeakMiB is the front door's memory peak and SpillPeakMiB
	// the peak of its open temp files (medians over valid runs), nil
	// without a front door or one that never spills.
	ProxyMemoryPeakMiB *float64 `json:"proxy_memory_peak_mib,omitempty"`
	SpillPeakMiB       *float64 `json:"spill_peak_mib,omitempty"`
	// AppMemoryGrowthMiB is what the window added to the app's memory
	// over its first sample (median over valid runs): what the server
	// held for its slow clients, a WebSocket's unsent messages above all.
	AppMemoryGrowthMiB *float64 `json:"app_memory_growth_mib,omitempty"`
}

// SiteShare is one wait site's share of samples.
type SiteShare struct {
	Site  string  `json:"site"`
	Share float64 `json:"share"`
}

// Capacity is how many concurrent slow clients of a column a row takes,
// directly, before /fast leaves the protected class.
type Capacity struct {
	Column string `json:"column"`
	// Path is the path the steps ran on: empty for the matrix's own
	// capacity steps (direct), a stack row's own path, or the path the
	// scale column stepped a row on (direct, nginx-on or a front door).
	Path  string         `json:"path,omitempty"`
	Steps []CapacityStep `json:"steps"`
	// FirstUnprotected is the fewest clients at which /fast was not
	// protected, null when every step was (or a step without data came
	// first); LastProtected the most clients below it that were, -1 if
	// none (the two bracket the capacity when the steps skip); StepLimit
	// the last step; Text says it in words.
	FirstUnprotected *int `json:"first_unprotected"`
	// FirstStalled is the fewest clients at which /fast stalled (class
	// stalled), null if no step did: the capacity the verdicts assert.
	FirstStalled  *int   `json:"first_stalled"`
	LastProtected int    `json:"last_protected"`
	StepLimit     int    `json:"step_limit"`
	Text          string `json:"text"`
	// Memory is the memory model fitted on a scale column's steps
	// (buffermodel.Memory): where the protecting container reaches its
	// limit, predicted against the bracket measured.
	Memory *MemoryFit `json:"memory_model,omitempty"`
}

// MemoryFit is buffermodel.Memory on one setup's scale steps: Role's
// container (the front door behind a proxy, else the app) grows
// PerClientKiB a client over BaseMiB, fitted on the steps in Fitted, and
// reaches LimitMiB at Predicted clients; LastUnder and FirstReached (0:
// none) are the bracket measured, and Right says the prediction is in it.
type MemoryFit struct {
	Role         string  `json:"role"`
	LimitMiB     float64 `json:"limit_mib"`
	BaseMiB      float64 `json:"base_mib"`
	PerClientKiB float64 `json:"per_client_kib"`
	Fitted       []int   `json:"fitted"`
	Predicted    float64 `json:"predicted_clients"`
	LastUnder    int     `json:"last_under"`
	FirstReached int     `json:"first_reached"`
	Right        bool    `json:"right"`
	Problem      string  `json:"problem,omitempty"`
}

// CapacityStep is one step: Clients concurrent slow clients. ClientCPUs
// is the client's quota as its cgroup said (more slow clients get more;
// 0 if unread), LagMaxMs how late
// the /fast requester ran at worst and ClientThrottledShare the client's
// throttled periods (median over runs): the client, not the server, set
// the figures when these are high.
type CapacityStep struct {
	Clients              int     `json:"clients"`
	Condition            string  `json:"condition"`
	Class                string  `json:"class"`
	P95Ms                float64 `json:"p95_ms"`
	ClientCPUs           float64 `json:"client_cpus"`
	LagMaxMs             float64 `json:"lag_max_ms"`
	ClientThrottledShare float64 `json:"client_throttled_share"`
	// What the step cost, medians over its valid runs (nil when a run
	// did not observe it, or none was valid): the app's and the proxy's
	// memory peaks and NGINX's temp-file peak (MiB), the app's and the
	// client's CPU (percent of a core). OOMKilled are the roles the OOM
	// killer hit in any sound run (a step that may exhaust memory).
	AppMemoryPeakMiB   *float64 `json:"app_memory_peak_mib,omitempty"`
	ProxyMemoryPeakMiB *float64 `json:"proxy_memory_peak_mib,omitempty"`
	SpillPeakMiB       *float64 `json:"spill_peak_mib,omitempty"`
	AppCPUPercent      *float64 `json:"app_cpu_percent,omitempty"`
	ClientCPUPercent   *float64 `json:"client_cpu_percent,omitempty"`
	OOMKilled          []string `json:"oom_killed,omitempty"`
	// AppFDsPeak and ProxyFDsPeak are the descriptors the app's and the
	// proxy's processes held open at most (medians over valid runs).
	AppFDsPeak   *float64 `json:"app_fds_peak,omitempty"`
	ProxyFDsPeak *float64 `json:"proxy_fds_peak,omitempty"`
	// SlowOutcomes counts the slow clients of the sound runs by outcome
	// (load.Download.Outcome): what a step's thousands of connections
	// got, held or closed by a server at its limit.
	SlowOutcomes map[string]int `json:"slow_outcomes,omitempty"`
}
