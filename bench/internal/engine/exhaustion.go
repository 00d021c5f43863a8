package engine

import (
	"fmt"

	"wsgilab/bench/internal/buffermodel"
	"wsgilab/bench/internal/load"
	"wsgilab/bench/internal/podspec"
	"wsgilab/bench/internal/report"
	"wsgilab/bench/internal/verdict"
	"wsgilab/nginxconf"
)

// The exhaustion table: where NGINX's buffering stops protecting article A's
// two sync workers. Each condition drives article A's protected cell
// (nginx-on-2dl: slow readers at 2 MiB/s) past one of NGINX's own
// limits, and records what the slow clients and /fast get.

// TempLimitSizes are responses below, at and past the article's
// proxy_max_temp_file_size (32m): at 48 MiB NGINX's temp file is full
// before the app has written the response.
var TempLimitSizes = []int64{24 << 20, 32 << 20, 48 << 20}

// TempLimitPast is the size past the limit, the one make test runs.
const TempLimitPast = 48 << 20

// FullTempReaders is how many 16 MiB slow readers the full-temp cell
// runs: each spills what its path to the client does not hold (about
// 12.8 MiB), and 8 of them need more than the proxy's /tmp tmpfs holds
// (podspec.ProxyTmpfsBytes, 80 MiB), where NGINX's temp path is.
const FullTempReaders = 8

// TempLimitID is the id of the temp-limit cell of size bytes.
func TempLimitID(size int64) string {
	return fmt.Sprintf("exhaustion-temp-limit-nginx-on-%dm", size>>20)
}

// FullTempID is the id of the full-temp cell of n readers.
func FullTempID(n int) string { return fmt.Sprintf("exhaustion-full-temp-nginx-on-%ddl", n) }

// ExhaustionTable are the exhaustion table's conditions: the temp-limit sizes,
// then the full temp directory.
var ExhaustionTable = func() []Condition {
	var cs []Condition
	for _, s := range TempLimitSizes {
		cs = append(cs, Condition{ID: TempLimitID(s), Server: podspec.GunicornSync(2), Path: NginxOn,
			Downloads: 2, BodyBytes: s, ReadRate: load.DefaultDownloadRate, TCP: Stock})
	}
	cs = append(cs, Condition{ID: FullTempID(FullTempReaders), Server: podspec.GunicornSync(2), Path: NginxOn,
		Downloads: FullTempReaders, BodyBytes: load.DefaultLargeSize, ReadRate: load.DefaultDownloadRate, TCP: Stock,
		ClientCPUs: ClientCPUsFor(FullTempReaders)})
	return cs
}()

// TempModel is the temp-file model at the article's NGINX settings: its
// proxy_max_temp_file_size, and the room the proxy's tmpfs gives its temp
// path.
var TempModel = buffermodel.Temp{MaxTempBytes: mustBytes(nginxconf.ArticleBuffers.MaxTempFileSize),
	RoomBytes: podspec.ProxyTmpfsBytes, DefaultMaxTempBytes: 1 << 30}

func mustBytes(size string) float64 {
	n, err := nginxconf.Bytes(size)
	if err != nil {
		panic(err)
	}
	return float64(n)
}

// FitExhaustion fits TempModel on conds: its spill per download from every
// condition of two sync workers' slow readers behind the article's
// buffering on whose temp files stayed under the limit (article A's
// nginx-on-2dl, its pilot, the smaller temp-limit cells; not the pacer
// cross-check's twins, paced by another instrument), and predicts
// each exhaustion cell from the others. Nil when no exhaustion cell ran.
func FitExhaustion(conds []report.Condition) *report.Exhaustion {
	var fit, cells []report.Condition
	for _, c := range conds {
		if c.Server != podspec.GunicornSync(2).ID || c.Path != NginxOn.ID || c.TCPProfile != Stock.ID ||
			!(c.SlowKind == "" || c.SlowKind == load.KindRead) || c.Downloads == 0 || c.Pacer != "" || c.Fault != "" {
			continue
		}
		fit = append(fit, c)
		if isExhaustionCell(c.ID) {
			cells = append(cells, c)
		}
	}
	if len(cells) == 0 {
		return nil
	}
	l := TempModel.Fit(fit, cells)
	return &l
}

func isExhaustionCell(id string) bool {
	for _, c := range ExhaustionTable {
		if c.ID == id {
			return true
		}
	}
	return false
}

// ExhaustionVerdicts are the exhaustion table's verdicts (verdict.Exhaustion) about
// its cells.
func ExhaustionVerdicts() []verdict.Verdict {
	return verdict.Exhaustion(verdict.ExhaustionIDs{Below: TempLimitID(24 << 20), At: TempLimitID(32 << 20), Past: TempLimitID(TempLimitPast),
		FullTemp: FullTempID(FullTempReaders), Fit: []string{"nginx-on-2dl"}},
		TempModel.MaxTempBytes/load.DefaultDownloadRate, buffermodel.HeldShare, ScaleCIStep().ID)
}
