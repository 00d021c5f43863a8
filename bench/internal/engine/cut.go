package engine

import (
	"maps"
	"slices"
	"time"

	"wsgilab/bench/internal/podspec"
	"wsgilab/bench/internal/report"
	"wsgilab/bench/internal/stats"
)

// CutSlackBytes is how far from a fault's cut a slow client may have
// moved its body and still count as cut there (report.Cut.AtCut): the
// response's or request's header (under 1 KiB) on one side; on the
// other, what an uploader's kernel took into its 8 KiB send buffer, and
// the hop's 32 KiB chunk in flight, when the hop closed.
const CutSlackBytes = 256 << 10

// CutGrace is how long after the last cut a /fast request must start to
// count as one of the next requests (report.Cut.FastAfter): the requests
// that queued behind a held worker before the cut are served as it is
// freed, and are the cut's to explain, not the recovery's.
const CutGrace = 250 * time.Millisecond

// cutOf is what c's fault did in one run and what it left: rec's slow
// clients and the app's records of them, res's /fast requests, and o's
// descriptors and temp files. Nil when c's fault cuts nothing.
func cutOf(c Condition, rec Record, o *report.Observed) *report.Cut {
	f, ok := FaultByID(c.Fault)
	if !ok || !f.Cut() {
		return nil
	}
	res := rec.Load
	cut := &report.Cut{CutBytes: f.CutBytes, Clients: len(res.Downloads), FDsLeaked: map[string]int{}}
	var cutAt time.Duration
	for i, d := range res.Downloads {
		if i == 0 || d.Bytes < cut.BytesMin {
			cut.BytesMin = d.Bytes
		}
		cut.BytesMax = max(cut.BytesMax, d.Bytes)
		if !d.Complete() && d.Bytes >= f.CutBytes-CutSlackBytes && d.Bytes <= f.CutBytes+CutSlackBytes {
			cut.AtCut++
		}
		cutAt = max(cutAt, d.Start+d.Completion)
	}
	cut.CutAtS = cutAt.Seconds()
	var freed time.Duration
	for _, d := range res.Downloads {
		if c.Target != nil {
			break // a team's app keeps no records
		}
		w, ok := rec.Writes[d.ID]
		if !ok {
			continue
		}
		// From this client's own cut: an early cut's worker freed late is
		// not hidden behind a later cut.
		end := time.Duration(w.StartNs+int64(w.Write)-res.StartUnixNano) - (d.Start + d.Completion)
		if cut.Records == 0 || end > freed {
			freed = end
		}
		cut.Records++
		if w.Complete {
			cut.Complete++
		} else {
			cut.Incomplete++
		}
	}
	if c.Target == nil { // a team's app's are not missing: it keeps none
		cut.Missing = cut.Clients - cut.Records
	}
	if cut.Records > 0 {
		s := freed.Seconds()
		cut.FreedAfterCutS = &s
	}
	var after stats.Latencies
	for _, p := range res.Fast {
		if p.Scheduled+p.Lag >= cutAt+CutGrace {
			cut.FastAfter++
			after.Add(p.Latency)
			if p.OK(res.Spec) {
				cut.FastAfterOK++
			}
		}
	}
	after.Close()
	cut.FastAfterP95Ms = stats.Ms(after.P95)
	if o != nil {
		for _, role := range []string{podspec.RoleApp, podspec.RoleProxy} {
			if r, ok := o.Resources[role]; ok && r.FDsBefore != nil && r.FDsAtEnd != nil {
				cut.FDsLeaked[role] = *r.FDsAtEnd - *r.FDsBefore
			}
		}
		if o.Spills {
			cut.TempFilesLeft = o.TempFilesAtEnd
		}
	}
	return cut
}

// cutProblems are what keeps a run of a cutting fault from being
// measured whole: no descriptor count before or at the end of the load
// for the app (or the proxy, behind one), no temp-file sample of a
// spilling front door, or no /fast request after the cut.
func cutProblems(cut *report.Cut, o *report.Observed) []string {
	if cut == nil {
		return nil
	}
	var p []string
	roles := []string{podspec.RoleApp}
	if o != nil && o.Proxied {
		roles = append(roles, podspec.RoleProxy)
	}
	for _, role := range roles {
		if _, ok := cut.FDsLeaked[role]; !ok {
			p = append(p, "no count of the "+role+"'s descriptors before the load and at its end, which the leak check reads")
		}
	}
	if o != nil && o.Spills && cut.TempFilesLeft == nil {
		p = append(p, "no sample of the proxy's temp files, which the leak check reads")
	}
	if cut.FastAfter == 0 {
		p = append(p, "no /fast request started after the cut")
	}
	return p
}

// foldCuts is the worst of the runs' cuts: the fewest clients cut, the
// most records of each kind and missing, the latest freed, the most next requests failed,
// the slowest p95 after the cut, the most descriptors and temp files
// left. Nil when no run has one.
func foldCuts(cuts []*report.Cut) *report.Cut {
	var out *report.Cut
	for _, c := range cuts {
		if c == nil {
			continue
		}
		if out == nil {
			w := *c
			w.FDsLeaked = maps.Clone(c.FDsLeaked)
			if w.FDsLeaked == nil {
				w.FDsLeaked = map[string]int{}
			}
			if c.FreedAfterCutS != nil {
				v := *c.FreedAfterCutS
				w.FreedAfterCutS = &v
			}
			if c.TempFilesLeft != nil {
				v := *c.TempFilesLeft
				w.TempFilesLeft = &v
			}
			out = &w
			continue
		}
		out.Clients = max(out.Clients, c.Clients)
		out.AtCut = min(out.AtCut, c.AtCut)
		out.BytesMin, out.BytesMax = min(out.BytesMin, c.BytesMin), max(out.BytesMax, c.BytesMax)
		out.CutAtS = max(out.CutAtS, c.CutAtS)
		out.Records, out.Missing = max(out.Records, c.Records), max(out.Missing, c.Missing)
		out.Incomplete, out.Complete = max(out.Incomplete, c.Incomplete), max(out.Complete, c.Complete)
		if c.FreedAfterCutS != nil && (out.FreedAfterCutS == nil || *c.FreedAfterCutS > *out.FreedAfterCutS) {
			v := *c.FreedAfterCutS
			out.FreedAfterCutS = &v
		}
		// The worst share of next requests served, with its counts.
		if c.FastAfter > 0 && (out.FastAfter == 0 || float64(c.FastAfterOK)/float64(c.FastAfter) < float64(out.FastAfterOK)/float64(out.FastAfter)) {
			out.FastAfter, out.FastAfterOK = c.FastAfter, c.FastAfterOK
		}
		out.FastAfterP95Ms = max(out.FastAfterP95Ms, c.FastAfterP95Ms)
		for _, role := range slices.Sorted(maps.Keys(c.FDsLeaked)) {
			if v, ok := out.FDsLeaked[role]; !ok || c.FDsLeaked[role] > v {
				out.FDsLeaked[role] = c.FDsLeaked[role]
			}
		}
		if c.TempFilesLeft != nil && (out.TempFilesLeft == nil || *c.TempFilesLeft > *out.TempFilesLeft) {
			v := *c.TempFilesLeft
			out.TempFilesLeft = &v
		}
	}
	return out
}
