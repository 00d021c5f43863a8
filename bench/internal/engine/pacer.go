package engine

import (
	"math"

	"wsgilab/bench/internal/load"
	"wsgilab/bench/internal/toxic"
	"wsgilab/bench/internal/verdict"
)

// Pacers of a condition's slow readers (Condition.Pacer): what holds each
// download to ReadRate. Under the lab's own pacer the reader sleeps
// between reads of its 8 KiB socket; under Toxiproxy's, a hop between the
// client and the entry point relays the download through its bandwidth
// toxic, reading the entry point through a socket of the same 8 KiB, and
// the reader takes what comes (load.Spec.PacedByPath). The writer sees the
// same slow receiver either way, so the two must agree: Toxiproxy is the
// lab's second instrument for its pacer (verdict.PacersAgree).
const PacerToxiproxy = "toxiproxy"

// toxiproxyRate is rate (bytes/s) in Toxiproxy's bandwidth unit, KB/s of
// 1,000 bytes, rounded: article A's 2 MiB/s is 2,097 KB/s, 0.007 % slow.
func toxiproxyRate(rate float64) int64 { return int64(math.Round(rate / 1000)) }

// toxiproxyRateError is how far toxiproxyRate(rate) is from rate, as a
// share of rate.
func toxiproxyRateError(rate float64) float64 {
	return float64(toxiproxyRate(rate))*1000/rate - 1
}

// MaxToxiproxyRateError bounds toxiproxyRateError for a Toxiproxy-paced
// condition: a twin paced 0.1 % off its cell is 8 ms in article A's 8 s
// download; 1,500 bytes/s, rounded to 2 KB/s, would be 33 % off.
const MaxToxiproxyRateError = 0.001

// pacingHop is the client hop that paces c's downloads at ReadRate
// (PacerToxiproxy): the bandwidth toxic downstream, and the upstream
// socket's receive buffer the lab's reader asks for.
func (c Condition) pacingHop() *toxic.Hop {
	return &toxic.Hop{
		UpstreamReceiveBuffer: load.DefaultReceiveBuffer,
		Toxics: []toxic.Toxic{{Name: "pace", Type: "bandwidth", Stream: toxic.Downstream,
			Attributes: map[string]int64{"rate": toxiproxyRate(c.ReadRate)}}},
	}
}

// ToxiproxyTwin is c paced by Toxiproxy instead of the lab's reader,
// under its own id (verdict.ToxiproxyTwinID), with no article figure of
// its own.
func ToxiproxyTwin(c Condition) Condition {
	c.ID, c.Ref, c.Pacer = verdict.ToxiproxyTwinID(c.ID), "", PacerToxiproxy
	return c
}

// PacerCells are the Toxiproxy-paced twins of article A's cells ids
// under the stock profile (Plan.Pacers): the pacer cross-check's cells.
func PacerCells(ids ...string) []Condition {
	var out []Condition
	for _, c := range Pick(Under(ArticleA, Stock), ids...) {
		out = append(out, ToxiproxyTwin(c))
	}
	return out
}
