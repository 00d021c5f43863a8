package report

// Cut is what a fault that ends its slow clients' connections part-way
// did (engine.Fault.CutBytes), and what the servers left behind: in a
// run, that run's; in a condition, the worst of its sound runs (the
// fewest cut, the most of each kind of record, the most left, the latest
// freed), so that a verdict on it holds for every run.
type Cut struct {
	// CutBytes is where the fault cuts: the bytes its hop relays on a
	// slow client's stream, headers included.
	CutBytes int64 `json:"cut_bytes"`
	// Clients counts the slow clients; AtCut those the fault ended where
	// it cuts: not complete, with a body of CutBytes less
	// engine.CutSlackBytes to CutBytes plus it moved. BytesMin and
	// BytesMax are the least and most body bytes a slow client moved.
	Clients  int   `json:"clients"`
	AtCut    int   `json:"at_cut"`
	BytesMin int64 `json:"bytes_min"`
	BytesMax int64 `json:"bytes_max"`
	// CutAtS is when the last slow client's connection ended, seconds
	// from the run's start.
	CutAtS float64 `json:"cut_at_s"`
	// Records counts the app's records of the slow clients (a response's
	// write, an upload's read), Missing the slow clients without one;
	// Incomplete the records that say the server did not take or read the
	// whole body (it saw the cut), Complete those that say it did. A
	// front door that took a body whole before the cut leaves complete
	// records; one that kept a cut upload from the app, none. In a
	// condition each is the most of any sound run. A team's app (a
	// stack check's) keeps none: all four are 0.
	Records    int `json:"records"`
	Missing    int `json:"missing"`
	Incomplete int `json:"incomplete"`
	Complete   int `json:"complete"`
	// FreedAfterCutS is how long after its own client's cut the app's
	// latest record of a slow client ended (the most over the clients):
	// when its worker was freed. Negative when it ended before the cut (a
	// front door took the body first); nil when the app kept no record.
	FreedAfterCutS *float64 `json:"freed_after_cut_s,omitempty"`
	// FastAfter counts the /fast requests started engine.CutGrace or more
	// after CutAtS, FastAfterOK those served, and FastAfterP95Ms is their
	// p95: the next requests.
	FastAfter      int     `json:"fast_after"`
	FastAfterOK    int     `json:"fast_after_ok"`
	FastAfterP95Ms float64 `json:"fast_after_p95_ms"`
	// FDsLeaked are, per role (the app's, the proxy's), the descriptors
	// reaching a socket or a path (a leak holds one; pipes and eventfds
	// an event loop makes on first use are left out) its processes held
	// at the window's end, the fewest over its last second
	// (engine.FDSettleSpan), over their quiet count before the load
	// (engine.FDQuietSpan). Above 0 is a leak.
	FDsLeaked map[string]int `json:"fds_leaked"`
	// TempFilesLeft is how many temp files NGINX still held open at the
	// window's last sample; nil on a path with no NGINX spilling.
	TempFilesLeft *int `json:"temp_files_left,omitempty"`
}
