package engine

import (
	"fmt"
	"slices"

	"wsgilab/bench/internal/buffermodel"
	"wsgilab/bench/internal/load"
	"wsgilab/bench/internal/podspec"
	"wsgilab/bench/internal/report"
	"wsgilab/bench/internal/verdict"
)

// The sweep isolates what article A changed at once between its pilot and
// its main series: response size and read rate, each on the direct and
// the buffering-off path, two sync workers and two downloads.
var (
	SweepSizes = []int64{4 << 20, 8 << 20, 12 << 20, 16 << 20, 24 << 20}
	SweepRates = []float64{1 << 20, 2 << 20, 4 << 20}
	SweepPaths = []Path{Direct, NginxOff}
	// FrontDoorSweepRate is the one rate the front doors (FrontDoors) are
	// swept at, over SweepSizes under the stock profile: the article's
	// 2 MiB/s, where each door's stall boundary by size is asked for.
	FrontDoorSweepRate float64 = 2 << 20
)

// SweepDownloads is how many slow downloads every sweep cell runs.
const SweepDownloads = 2

// SweepID is the id of the sweep's cell: sweep-<path>-<MiB>m-<MiB/s>mps,
// suffixed @<profile> off the stock profile.
func SweepID(p Path, size int64, rate float64, prof TCPProfile) string {
	id := fmt.Sprintf("sweep-%s-%dm-%gmps", p.ID, size>>20, rate/(1<<20))
	if prof.ID != Stock.ID {
		id += "@" + prof.ID
	}
	return id
}

// Sweep is the sweep's cells at sizes × rates on SweepPaths under prof,
// but for those article A's table (with its pilot) holds already: those
// are article A's cells, under their own ids, and the sweep reads them
// from there.
func Sweep(prof TCPProfile, sizes []int64, rates []float64) []Condition {
	return sweep(SweepPaths, prof, sizes, rates, Under(ArticleA, prof))
}

// FrontDoorSweep is the front doors' sweep: each of FrontDoors at
// SweepSizes,
// at FrontDoorSweepRate under the stock profile, but for the cell the
// resilience matrix holds already (16 MiB, its slow-read cell of
// gunicorn-sync-2), which the sweep reads from there, and but for the
// sizes past a door's verdict.FrontDoor.SweepMaxMiB.
func FrontDoorSweep() []Condition {
	var held []Condition
	for _, c := range MatrixCells() {
		held = append(held, c.Condition)
	}
	var out []Condition
	for _, c := range sweep(FrontDoors, Stock, SweepSizes, []float64{FrontDoorSweepRate}, held) {
		if slices.Contains(verdict.FrontDoorSweepRow(c.Path.ID), c.ID) {
			out = append(out, c)
		}
	}
	return out
}

// sweep is the cells at sizes × rates on paths under prof, but for those
// held already.
func sweep(paths []Path, prof TCPProfile, sizes []int64, rates []float64, held []Condition) []Condition {
	var out []Condition
	for _, p := range paths {
		for _, r := range rates {
			for _, s := range sizes {
				c := Condition{ID: SweepID(p, s, r, prof), Server: podspec.GunicornSync(2), Path: p,
					Downloads: SweepDownloads, BodyBytes: s, ReadRate: r, TCP: prof}
				if !slices.ContainsFunc(held, c.sameCell) {
					out = append(out, c)
				}
			}
		}
	}
	return out
}

// sameCell is whether c and d run the same pod under the same load.
func (c Condition) sameCell(d Condition) bool {
	return slices.Equal(c.Server.Cmd, d.Server.Cmd) && c.Server.ID == d.Server.ID && c.Path.ID == d.Path.ID && c.Path.TLS == d.Path.TLS && c.Path.HTTP2 == d.Path.HTTP2 && c.H2Streams == d.H2Streams &&
		c.HangS == d.HangS && c.Downloads == d.Downloads && c.SlowKind == d.SlowKind && c.BodyBytes == d.BodyBytes && c.ReadRate == d.ReadRate &&
		c.Pacer == d.Pacer && c.Fault == d.Fault && c.TCP == d.TCP && c.ClientCPUs == d.ClientCPUs && c.FastRequests == d.FastRequests && (c.Stream == nil) == (d.Stream == nil) &&
		(c.Stream == nil || *c.Stream == *d.Stream)
}

// SweepModel is the buffer model for article A's /fast schedule.
var SweepModel = buffermodel.New(buffermodel.Schedule{Offset: load.DefaultFastOffset,
	Rate: load.DefaultFastRate, Count: load.DefaultFastCount})

// FitSweep fits SweepModel on the sweep's cells among conds: every
// condition of two sync workers with two slow downloads on a sweep path
// or a front door, article A's, its pilot's and the matrix's slow-read
// cells of gunicorn-sync-2 included (not the matrix's other slow clients,
// nor a stream, nor a cell paced by another instrument than the lab's
// reader: the pacer cross-check's twins). It is nil when there are none.
func FitSweep(conds []report.Condition) *report.Sweep {
	paths := slices.Concat(SweepPaths, FrontDoors)
	var cells []report.Condition
	for _, c := range conds {
		if c.Server == podspec.GunicornSync(2).ID && c.Downloads == SweepDownloads &&
			(c.SlowKind == "" || c.SlowKind == load.KindRead) && c.Stream == nil && c.Pacer == "" && c.Fault == "" &&
			slices.ContainsFunc(paths, func(p Path) bool { return p.ID == c.Path }) {
			cells = append(cells, c)
		}
	}
	if len(cells) == 0 {
		return nil
	}
	s := SweepModel.Fit(cells)
	return &s
}
