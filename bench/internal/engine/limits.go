package engine

import (
	"fmt"
	"slices"

	"wsgilab/bench/internal/load"
	"wsgilab/bench/internal/podspec"
	"wsgilab/bench/internal/verdict"
	"wsgilab/nginxconf"
)

// The connection-limit cells: protecting setups with one connection limit
// moved, under LimitConns silent connections (the silent column's step,
// ScaleSilent). Beside each, the same setup at its default limit is the
// silent column's own step at LimitConns: the limit moved must move what
// the connections and /fast get.

// LimitConns is the silent connections every limit cell opens.
const LimitConns = 1024

// Moved limits, each well under LimitConns.
const (
	// LimitWorkerConnections is NGINX's worker_connections moved down
	// from 1,024: its two workers hold at most 512 connections.
	LimitWorkerConnections = 256
	// LimitBacklog is a listen backlog moved down (NGINX's 511,
	// Uvicorn's 2,048).
	LimitBacklog = 16
	// LimitGeventConnections is Gunicorn's --worker-connections moved
	// down from 1,000 for each gevent worker.
	LimitGeventConnections = 100
	// LimitConcurrency is Uvicorn's --limit-concurrency for each worker:
	// 64, so that both workers are past it whatever share of the 1,024
	// connections each accepted (at 256, one worker of a run held fewer,
	// and 50 of 72 /fast requests reached it and were served).
	LimitConcurrency = 64
)

// Limit cells' ids.
const (
	LimitNginxWCID            = "limit-nginx-worker-connections-256"
	LimitNginxBacklogID       = "limit-nginx-worker-connections-256-backlog-16"
	LimitGeventID             = "limit-gevent-worker-connections-100"
	LimitUvicornConcurrencyID = "limit-uvicorn-limit-concurrency-64"
	// LimitUvicornBurstID and LimitUvicornBacklogID open their connections
	// all at once (no ConnectRate), at Uvicorn's default backlog and at
	// LimitBacklog: a burst is what a backlog is for.
	LimitUvicornBurstID   = "limit-uvicorn-burst"
	LimitUvicornBacklogID = "limit-uvicorn-backlog-16-burst"
)

// ConnLimit is a connection-limit cell: its condition, what it moved,
// and the cell it is read against (the same setup at the default, or
// with one limit fewer moved).
type ConnLimit struct {
	Condition Condition
	Moved     string
	Against   string
}

// LimitCells are the connection-limit cells.
var LimitCells = func() []ConnLimit {
	nginx := func(id string, opts ...nginxconf.Option) Path {
		return NginxPath(id, nginxconf.New(append([]nginxconf.Option{nginxconf.WithBuffering(true)}, opts...)...))
	}
	silentStep := func(row string, p Path) string {
		i := slices.IndexFunc(ScaleRows, func(r ScaleRow) bool { return r.Row.ID == row && r.Path.ID == p.ID })
		return ScaleID(ScaleSilent, ScaleRows[i], LimitConns)
	}
	wc := nginxconf.WithWorkerConnections(LimitWorkerConnections)
	cells := []struct {
		id, moved, against string
		server             podspec.Server
		path               Path
		burst              bool
	}{
		{LimitNginxWCID, "NGINX worker_connections 256 (default 1,024)", silentStep(podspec.GunicornSync(2).ID, NginxOn),
			podspec.GunicornSync(2), nginx("nginx-on-wc-256", wc), false},
		{LimitNginxBacklogID, "NGINX worker_connections 256 and listen backlog 16 (default 511)", LimitNginxWCID,
			podspec.GunicornSync(2), nginx("nginx-on-wc-256-backlog-16", wc, nginxconf.WithListenBacklog(LimitBacklog)), false},
		{LimitGeventID, "Gunicorn --worker-connections 100 per gevent worker (default 1,000)", silentStep(podspec.GunicornGevent(2).ID, Direct),
			must(podspec.WithFlag(podspec.GunicornGevent(2), "--worker-connections", LimitGeventConnections)), Direct, false},
		{LimitUvicornConcurrencyID, "Uvicorn --limit-concurrency 64 per worker (default none)", silentStep(podspec.Uvicorn(2).ID, Direct),
			must(podspec.WithFlag(podspec.Uvicorn(2), "--limit-concurrency", LimitConcurrency)), Direct, false},
		{LimitUvicornBurstID, "Uvicorn, the 1,024 connections opened at once (default backlog 2,048)", silentStep(podspec.Uvicorn(2).ID, Direct),
			podspec.Uvicorn(2), Direct, true},
		{LimitUvicornBacklogID, "Uvicorn --backlog 16, the 1,024 connections opened at once", LimitUvicornBurstID,
			must(podspec.WithFlag(podspec.Uvicorn(2), "--backlog", LimitBacklog)), Direct, true},
	}
	var out []ConnLimit
	for _, l := range cells {
		c := Condition{ID: l.id, Server: l.server, Path: l.path, TCP: Stock}
		ScaleSilent.Apply(&c, LimitConns)
		if l.burst {
			c.ConnectRate = 0
		}
		out = append(out, ConnLimit{Condition: c, Moved: l.moved, Against: l.against})
	}
	return out
}()

// LimitTable are the connection-limit cells' conditions.
var LimitTable = func() []Condition {
	var out []Condition
	for _, l := range LimitCells {
		out = append(out, l.Condition)
	}
	return out
}()

func must(s podspec.Server, err error) podspec.Server {
	if err != nil {
		panic("engine: " + err.Error())
	}
	return s
}

// LimitVerdicts are the connection-limit cells' verdicts, each a
// mechanism's bound read against the same setup at its default
// (reports/measurements.md has their runs).
func LimitVerdicts() []verdict.Verdict {
	uvicornDefault := LimitCells[slices.IndexFunc(LimitCells, func(l ConnLimit) bool { return l.Condition.ID == LimitUvicornConcurrencyID })].Against
	return []verdict.Verdict{
		{ID: "nginx-worker-connections-caps-held", Kind: verdict.Lab, Unit: "connections per run",
			Check: verdict.Below(LimitNginxWCID, verdict.SlowPerRun(load.OutcomeHeld), 2*LimitWorkerConnections),
			Text: fmt.Sprintf("NGINX's two workers hold at most 2 × worker_connections (%d) of %d silent connections and close the others at once: the limit, not the memory, ends what a buffering NGINX holds",
				2*LimitWorkerConnections, LimitConns)},
		{ID: "gevent-worker-connections-stalls", Kind: verdict.Lab, Unit: "ms", Check: verdict.Stalls(LimitGeventID),
			Text: fmt.Sprintf("with --worker-connections %d a gevent worker's pool is full of silent connections: /fast waits in the listen queue until they time out, where the default 1,000 kept it protected", LimitGeventConnections)},
		{ID: "uvicorn-limit-concurrency-answers-503", Kind: verdict.Lab, Unit: "share",
			Check: verdict.Above(LimitUvicornConcurrencyID, verdict.FastFailedShare, 0.9),
			Text:  fmt.Sprintf("past --limit-concurrency (%d a worker) Uvicorn answers /fast 503 while the silent connections count against it: a clear error status, never a hang", LimitConcurrency)},
		{ID: "uvicorn-default-serves-beside-silent-connections", Kind: verdict.Lab, Unit: "share",
			Check: verdict.Zero(uvicornDefault, verdict.FastFailedShare),
			Text:  fmt.Sprintf("at its default (no limit) Uvicorn serves every /fast request beside the same %d silent connections", LimitConns)},
		{ID: "uvicorn-backlog-drops-a-burst", Kind: verdict.Lab, Unit: "ms",
			Check: verdict.Above(LimitUvicornBacklogID, verdict.ConnectMsMax, SYNRetryMs),
			Text:  fmt.Sprintf("%d connections opened at once against --backlog %d: the full listen queue drops SYNs, and a client connects only on its retry a second later", LimitConns, LimitBacklog)},
		{ID: "uvicorn-default-backlog-takes-the-burst", Kind: verdict.Lab, Unit: "ms",
			Check: verdict.Below(LimitUvicornBurstID, verdict.ConnectMsMax, SYNRetryMs),
			Text:  "the same burst against Uvicorn's default backlog (2,048): every connection completes before any SYN is retried"},
	}
}

// SYNRetryMs is the first SYN retransmission's timeout (Linux's
// TCP_TIMEOUT_INIT, 1 s): a connect that took longer had its SYN dropped.
const SYNRetryMs = 1000
