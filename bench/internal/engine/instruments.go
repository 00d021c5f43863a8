package engine

import "wsgilab/bench/internal/report"

// The lab's own instruments, as figures a benchmark reports
// (BenchmarkInstruments; issue 15 set their goals).

// GeneratorCost compares our closed loop with ab on the same pod, one run
// each: our CPU per request over ab's, and our req/s over ab's. Zero when
// either run completed nothing.
func GeneratorCost(ours, ab RunB) (cpuPerRequest, reqPerS float64) {
	o, a := ours.Result, ab.Result
	if o.Completed == 0 || a.Completed == 0 || a.CPU == 0 || a.ReqPerS == 0 {
		return 0, 0
	}
	cpuPerRequest = (float64(o.CPU) / float64(o.Completed)) / (float64(a.CPU) / float64(a.Completed))
	return cpuPerRequest, o.ReqPerS / a.ReqPerS
}

// RunCost is what a run of article A cost the instruments: the sampler's
// CPU in percent of a core, the prober's worst schedule lag, and the run's
// wall time over its load window (pod start and teardown included).
func RunCost(r report.Run) (probeCPUPercent, lagMaxMs, wallPerWindow float64) {
	if r.WindowS > 0 {
		wallPerWindow = r.WallS / r.WindowS
	}
	return r.Observed.Probe.CPUPercent, r.LagMaxMs, wallPerWindow
}
