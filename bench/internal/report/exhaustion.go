package report

// Exhaustion is the temp-file model's fit on the exhaustion table (exhaustion.json):
// what NGINX's buffering spills per slow reader, where its temp-file
// limit and its temp directory's room end the protection, and each cell
// predicted against its measurement.
type Exhaustion struct {
	Model TempLimits `json:"model"`
	// HeldBytesPerDownload is D, what the path from NGINX to its client
	// held per download while NGINX spilled the rest: the median over
	// From of the body size less the temp-file peak per download.
	HeldBytesPerDownload float64          `json:"held_bytes_per_download"`
	From                 []string         `json:"from"`
	Cells                []ExhaustionCell `json:"cells"`
	// AtDefault restates the rule at NGINX's own default limit (1024m),
	// at the cells' read rate (Problem says when they differ).
	AtDefault TempRule `json:"at_default"`
	// Problem says why nothing could be predicted.
	Problem string `json:"problem,omitempty"`
}

// TempLimits are the model's constants.
type TempLimits struct {
	// MaxTempBytes is proxy_max_temp_file_size; RoomBytes the temp
	// directory's size (the proxy's tmpfs).
	MaxTempBytes float64 `json:"max_temp_bytes"`
	RoomBytes    float64 `json:"room_bytes"`
}

// TempRule is the temp-file rule at one limit and rate: a response
// larger than SmallestHeldBytes holds its worker for at least HeldS, and
// each one spills up to the limit.
type TempRule struct {
	MaxTempBytes      float64 `json:"max_temp_bytes"`
	RateBytesPerS     float64 `json:"rate_bytes_per_s"`
	SmallestHeldBytes float64 `json:"smallest_held_bytes"`
	HeldS             float64 `json:"held_s"`
}

// ExhaustionCell is one exhaustion cell, predicted from the others.
type ExhaustionCell struct {
	Condition string  `json:"condition"`
	Readers   int     `json:"readers"`
	SizeBytes int64   `json:"size_bytes"`
	Runs      int     `json:"runs"`
	P95Ms     float64 `json:"p95_ms"`
	// Predicted: the temp-file peak (MiB), the readers cut short (those
	// the temp directory has no room for), whether the response is past
	// the limit, and then how long its worker is held at least.
	PredictedTempPeakMiB float64 `json:"predicted_temp_peak_mib"`
	PredictedCut         int     `json:"predicted_cut"`
	PredictedPast        bool    `json:"predicted_past"`
	PredictedHeldS       float64 `json:"predicted_held_s"`
	// Measured: the temp-file peak (valid runs only, nil without), the
	// readers cut short (truncated or reset) per sound run, the fewest
	// and the most, and Cut between them; the app's write time.
	TempPeakMiB *float64 `json:"temp_peak_mib"`
	Cut         float64  `json:"cut"`
	CutMin      int      `json:"cut_min"`
	CutMax      int      `json:"cut_max"`
	WriteS      float64  `json:"write_s"`
	// Right says the prediction met the measurement: the temp peak
	// within buffermodel.TempTolerance, the cut count exact in every
	// run, a worker past the limit held at least buffermodel.HeldShare of
	// the predicted time.
	Right   bool   `json:"right"`
	Problem string `json:"problem,omitempty"`
}
