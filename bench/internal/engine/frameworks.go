package engine

import (
	"slices"
	"strings"

	"wsgilab/bench/internal/podspec"
)

// The framework cells (issue 33): article A warns "do not infer behavior
// from the framework's name alone". The app's /fast, /large and /upload
// are written again in Flask, Django and FastAPI (wsgiapp/flaskapp.py,
// djangoapp.py, fastapiapp.py) and run under the servers below, under
// slow readers and slow uploads, directly and behind NGINX buffering off
// and on. Each framework cell is asserted to fall in its framework-free
// twin's class (verdict.FrameworkVerdict), and what the framework costs
// on /fast is reported beside it (FrameworkCosts).

// FrameworkServers are the rows (by id) each framework runs under: sync
// x2, gthread 1x4 and gevent for the WSGI frameworks; for FastAPI, an
// ASGI app that Gunicorn's sync and gthread workers cannot serve, the
// ASGI rows: Gunicorn's Uvicorn worker x2 (the sync row's two processes),
// Uvicorn x2 and Hypercorn x2.
var FrameworkServers = []struct {
	Framework string
	Rows      []string
}{
	{podspec.Flask, wsgiFrameworkRows},
	{podspec.Django, wsgiFrameworkRows},
	{podspec.FastAPI, []string{podspec.GunicornUvicorn(2).ID, podspec.Uvicorn(2).ID, podspec.Hypercorn(2).ID}},
}

var wsgiFrameworkRows = []string{podspec.GunicornSync(2).ID, podspec.GunicornGthread(1, 4).ID, podspec.GunicornGevent(2).ID}

// FrameworkColumns are the columns a framework cell runs (those of its
// twin's among them): what /large and /upload meet.
var FrameworkColumns = []string{SlowRead.ID, SlowUpload.ID}

// FrameworkPaths are the paths a framework cell runs.
var FrameworkPaths = []string{Direct.ID, NginxOff.ID, NginxOn.ID}

// FrameworkRows are the framework rows of servers (FrameworkServers): each
// its twin's server, concurrency and basis, serving the framework's app,
// on FrameworkPaths, under those of FrameworkColumns its twin runs.
func FrameworkRows(servers []Row) []Row {
	var out []Row
	for _, fs := range FrameworkServers {
		for _, id := range fs.Rows {
			i := slices.IndexFunc(servers, func(r Row) bool { return r.ID == id })
			if i < 0 {
				panic("engine: framework row " + id + " is not a server row")
			}
			twin := servers[i]
			s, err := podspec.WithFramework(twin.Server, fs.Framework)
			if err != nil {
				panic(err)
			}
			cols := slices.DeleteFunc(slices.Clone(FrameworkColumns), func(c string) bool {
				return twin.Only != nil && !slices.Contains(twin.Only, c)
			})
			out = append(out, Row{ID: s.ID, Server: s, Concurrency: twin.Concurrency, Basis: twin.Basis,
				Only: cols, Paths: FrameworkPaths, Framework: fs.Framework, Twin: twin.ID})
		}
	}
	return out
}

// CIFrameworkRows are the framework rows make test runs, one per
// framework, under slow readers directly (issue 33's budget): Flask on
// the sync workers, which stall as the framework-free app's do (article
// A's direct-2dl); Django on gthread 1x4, protected as gthread-2dl is;
// FastAPI on Uvicorn, protected as the framework-free ASGI app is. Each
// twin's verdict runs in make test too.
var CIFrameworkRows = []string{
	podspec.GunicornSync(2).ID + "-" + podspec.Flask,
	podspec.GunicornGthread(1, 4).ID + "-" + podspec.Django,
	podspec.Uvicorn(2).ID + "-" + podspec.FastAPI,
}

// Families are the report's groups of rows, in order: a server row's by
// its server's id, a framework row's by its framework.
var Families = []struct{ Prefix, Name string }{
	{"gunicorn-", "Gunicorn"},
	{"gunicorn@" + podspec.GunicornBookworm, "Gunicorn " + podspec.GunicornBookworm + " (Debian bookworm's own)"},
	{"uvicorn-", "Uvicorn"},
	{"uwsgi-", "uWSGI"},
	{"daphne-", "Daphne"},
	{"hypercorn-", "Hypercorn"},
	{"waitress-", "waitress"},
	{"modwsgi-", "mod_wsgi (Apache httpd)"},
	{podspec.Flask, "Flask"},
	{podspec.Django, "Django"},
	{podspec.FastAPI, "FastAPI"},
}

// Family is row r's group in the report (Families): its framework's,
// its Gunicorn release's (gunicorn@<release>), or its server's; "" for a
// server no family names (an engine test checks that every row has one).
func (r Row) Family() string {
	for _, f := range Families {
		switch {
		case r.Framework != "":
			if f.Prefix == r.Framework {
				return f.Name
			}
		case r.Gunicorn != "":
			if f.Prefix == "gunicorn@"+r.Gunicorn {
				return f.Name
			}
		case strings.HasPrefix(r.ID, f.Prefix):
			return f.Name
		}
	}
	return ""
}
