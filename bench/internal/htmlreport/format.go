package htmlreport

import (
	"math"
	"strconv"
	"strings"
)

// Fixed formatting, so the page is the same for the same files.

// num prints v with about three significant digits, more for small values:
// 5966, 428.4, 13.52, 1.452, 0.055.
func num(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "–"
	}
	a := math.Abs(v)
	prec := 0
	switch {
	case a == 0:
		return "0"
	case a >= 1000:
		prec = 0
	case a >= 100:
		prec = 1
	case a >= 10:
		prec = 2
	case a >= 1:
		prec = 3
	default:
		prec = 4
	}
	s := strconv.FormatFloat(v, 'f', prec, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// optNum is num, or a dash for zero (a figure that was not given).
func optNum(v float64) string {
	if v == 0 {
		return "–"
	}
	return num(v)
}

// pct prints a share (0..1) as a percentage with one decimal.
func pct(share float64) string {
	return strconv.FormatFloat(100*share, 'f', 1, 64) + " %"
}

// rangeText prints lo–hi, or a dash when there is no range.
func rangeText(lo, hi float64) string {
	if lo == 0 && hi == 0 {
		return "–"
	}
	return num(lo) + "–" + num(hi)
}

// mib prints a byte count in MiB.
func mib(b int64) string {
	return strconv.FormatFloat(float64(b)/(1<<20), 'f', 1, 64) + " MiB"
}

// size prints a byte count in MiB, or in GiB from 1 GiB.
func size(b int64) string {
	if b >= 1<<30 {
		return strconv.FormatFloat(float64(b)/(1<<30), 'f', 1, 64) + " GiB"
	}
	return mib(b)
}

// seconds prints a duration in seconds with two decimals.
func seconds(s float64) string {
	return strconv.FormatFloat(s, 'f', 2, 64) + " s"
}
