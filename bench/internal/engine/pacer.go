package engine

import (
	"math"
	"net/url"

	"wsgilab/bench/internal/load"
	"wsgilab/bench/internal/podspec"
	"wsgilab/bench/internal/toxic"
	"wsgilab/bench/internal/verdict"
)

// Pacers of a condition's slow readers (Condition.Pacer): what holds each
// download to ReadRate. Under the lab's own pacer the reader sleeps
// between reads of its 8 KiB socket; under Toxiproxy's, a hop between the
// client and the entry point relays the download through its bandwidth
// toxic, reading the entry point through a socket of the same 8 KiB, and
// the reader takes what comes (load.Spec.Unpaced). The writer sees the
// same slow receiver either way, so the two must agree: Toxiproxy is the
// lab's second instrument for its pacer (verdict.PacersAgree).
const (
	PacerLab       = "lab"
	PacerToxiproxy = "toxiproxy"
)

// toxiproxyRate is rate (bytes/s) in Toxiproxy's bandwidth unit, KB/s of
// 1,000 bytes, rounded: article A's 2 MiB/s is 2,097 KB/s, 0.007 % slow.
func toxiproxyRate(rate float64) int64 { return int64(math.Round(rate / 1000)) }

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

// throughClientHop is u reached through the pod's client hop
// (podspec.ClientHopListen): only the downloads go through it, so /fast
// is timed as in the lab-paced cell.
func throughClientHop(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return u // Condition.Load builds u from the pod's own URL
	}
	p.Host = podspec.ClientHopListen
	return p.String()
}

// ToxiproxyPaced is c paced by Toxiproxy instead of the lab's reader,
// under its own id (verdict.ToxiproxyPaced), with no article figure of
// its own.
func ToxiproxyPaced(c Condition) Condition {
	c.ID, c.Ref, c.Pacer = verdict.ToxiproxyPaced(c.ID), "", PacerToxiproxy
	return c
}

// PacerCells are the Toxiproxy-paced twins of article A's cells ids
// under the stock profile (Plan.Pacers): the pacer cross-check's cells.
func PacerCells(ids ...string) []Condition {
	var out []Condition
	for _, c := range Pick(Under(ArticleA, Stock), ids...) {
		out = append(out, ToxiproxyPaced(c))
	}
	return out
}
