package report

// Sweep is sweep.json: the size × rate sweep's cells (two sync workers,
// two downloads, direct and NGINX buffering off, under each TCP profile)
// with the buffer model's predictions (package buffermodel).
type Sweep struct {
	Model SweepModel `json:"model"`
	// Capacities are, per path, profile and rate, what the path held per
	// download over the cells of that group.
	Capacities []PathCapacity `json:"capacities"`
	Cells      []SweepCell    `json:"cells"`
	// Boundaries are the predicted smallest stalling sizes.
	Boundaries []Boundary `json:"boundaries"`
	Score      SweepScore `json:"score"`
}

// SweepModel are the model's constants.
type SweepModel struct {
	// StallMs is the p95 above which a cell counts as stalled.
	StallMs float64 `json:"stall_ms"`
	// A predicted write time is right within WriteTolerance (relative)
	// or WriteFloorS (absolute), whichever is larger.
	WriteTolerance float64 `json:"write_tolerance"`
	WriteFloorS    float64 `json:"write_floor_s"`
	// LeadS is when the request at /fast's p95 is sent after the
	// downloads start; a write lasting longer delays it by the rest.
	LeadS float64 `json:"lead_s"`
}

// PathCapacity is what a path held per download when the app's write
// ended, over the cells of its path, profile and rate (From).
type PathCapacity struct {
	Path          string  `json:"path"`
	Profile       string  `json:"profile"`
	RateBytesPerS float64 `json:"rate_bytes_per_s"`
	// From are the cells it was measured in: those of the path, profile
	// and rate whose write waited for the client (saturated); when none
	// did, the one that held the most (a lower bound).
	From []string `json:"from"`
	// BytesPerDownload is C: per cell the mean over the downloads of the
	// bytes the client had not read when the app's write ended (median
	// over valid runs), then the median over From; FirstFreedBytes the
	// same of the largest over the downloads, the path of the worker
	// freed first.
	BytesPerDownload float64 `json:"bytes_per_download"`
	FirstFreedBytes  float64 `json:"first_freed_bytes"`
	// PeakBytesPerDownload is the most the path's sockets held at once,
	// per download, for comparison: early in a download the autotuned
	// send buffer holds more than when the write ends.
	PeakBytesPerDownload *float64 `json:"peak_bytes_per_download"`
	// HopPeakBytesPerDownload are each hop's own peak (send plus receive
	// queue) per download; they need not fall in one sample.
	HopPeakBytesPerDownload map[string]float64 `json:"hop_peak_bytes_per_download,omitempty"`
	// Saturated is whether any cell's write waited for its client (the
	// path held less than the response), so C is the path's and not a
	// response's; otherwise C is a lower bound.
	Saturated bool `json:"saturated"`
	// Problem says why there is no capacity.
	Problem string `json:"problem,omitempty"`
}

// SweepCell is one cell: measured against predicted.
type SweepCell struct {
	Condition     string  `json:"condition"`
	Path          string  `json:"path"`
	Profile       string  `json:"profile"`
	SizeBytes     int64   `json:"size_bytes"`
	RateBytesPerS float64 `json:"rate_bytes_per_s"`
	Runs          int     `json:"runs"`
	// Predicted is whether the model predicted the cell: from the other
	// saturated cells of its path, profile and rate (Problem says why not).
	Predicted bool `json:"predicted"`
	// Measured: /fast p95 (median and range over runs), the app's write
	// time (median), and what the path held per download at the write's
	// end.
	P95Ms                float64  `json:"p95_ms"`
	P95MsMin             float64  `json:"p95_ms_min"`
	P95MsMax             float64  `json:"p95_ms_max"`
	WriteS               float64  `json:"write_s"`
	HeldBytesPerDownload *float64 `json:"held_bytes_per_download"`
	// Predicted by the model, only when Predicted: from CapacityBytes and
	// FirstFreedBytes, the medians over the other saturated cells of its
	// group; the p95 above the idle latency (0: no request waits for a
	// worker). The write and stall verdicts below likewise.
	CapacityBytes   float64 `json:"capacity_bytes"`
	FirstFreedBytes float64 `json:"first_freed_bytes"`
	PredictedWriteS float64 `json:"predicted_write_s"`
	PredictedP95Ms  float64 `json:"predicted_p95_ms"`
	// WriteErrorS is |predicted - measured| write time; WriteError the
	// same over the measured (absent when it is 0).
	WriteErrorS float64  `json:"write_error_s"`
	WriteError  *float64 `json:"write_error"`
	WriteRight  bool     `json:"write_right"`
	// Stalled is measured: p95 over the model's StallMs.
	Stalled        bool   `json:"stalled"`
	PredictedStall bool   `json:"predicted_stall"`
	StallRight     bool   `json:"stall_right"`
	Problem        string `json:"problem,omitempty"`
}

// Boundary is the predicted smallest size that stalls /fast on a path
// under a profile at a read rate.
type Boundary struct {
	Path          string  `json:"path"`
	Profile       string  `json:"profile"`
	RateBytesPerS float64 `json:"rate_bytes_per_s"`
	SizeBytes     float64 `json:"size_bytes"`
	// IdleSizeBytes is the largest size that keeps /fast idle: its first
	// worker is freed before the p95 request is sent.
	IdleSizeBytes float64 `json:"idle_size_bytes"`
	// LowerBound is set when the capacity was not saturated: the boundary
	// lies at least this far.
	LowerBound bool `json:"lower_bound"`
}

// SweepScore is how often the model was right, over the cells it
// predicted.
type SweepScore struct {
	Cells      int      `json:"cells"`
	WriteRight int      `json:"write_right"`
	StallRight int      `json:"stall_right"`
	WriteShare *float64 `json:"write_share"`
	StallShare *float64 `json:"stall_share"`
	// WriteWrong and StallWrong name the cells the model got wrong (the
	// write ones with both times).
	WriteWrong []string `json:"write_wrong,omitempty"`
	StallWrong []string `json:"stall_wrong,omitempty"`
}
