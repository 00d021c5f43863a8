package podspec

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"wsgilab/wsgiapp"
)

// The resilience matrix's servers beyond article A's two, all serving
// wsgiapp/app.py or its ASGI twin wsgiapp/asgiapp.py on 127.0.0.1:AppPort.

// GunicornGevent is Gunicorn with `workers` gevent workers (each takes up
// to Gunicorn's default 1,000 connections).
func GunicornGevent(workers int) Server {
	return Server{
		ID: fmt.Sprintf("gunicorn-gevent-%d", workers),
		Cmd: []string{"python3", "-m", "gunicorn", "--bind", fmt.Sprintf("127.0.0.1:%d", AppPort),
			"--worker-class", "gevent", "--workers", strconv.Itoa(workers), "app:application"},
	}
}

// GunicornGeventWS is Gunicorn with `workers` of gevent-websocket's
// worker, the gevent worker that hands a WebSocket Upgrade to the WSGI
// app as environ["wsgi.websocket"].
func GunicornGeventWS(workers int) Server {
	return Server{
		ID: fmt.Sprintf("gunicorn-geventws-%d", workers),
		Cmd: []string{"python3", "-m", "gunicorn", "--bind", fmt.Sprintf("127.0.0.1:%d", AppPort),
			"--worker-class", "geventwebsocket.gunicorn.workers.GeventWebSocketWorker", "--workers", strconv.Itoa(workers), "app:application"},
	}
}

// GunicornUvicorn is Gunicorn with `workers` of Uvicorn's worker class
// serving the ASGI twin.
func GunicornUvicorn(workers int) Server {
	return Server{
		ID: fmt.Sprintf("gunicorn-uvicorn-%d", workers),
		Cmd: []string{"python3", "-m", "gunicorn", "--bind", fmt.Sprintf("127.0.0.1:%d", AppPort),
			"--worker-class", "uvicorn.workers.UvicornWorker", "--workers", strconv.Itoa(workers), "asgiapp:app"},
	}
}

// Uvicorn is Uvicorn on its own with `workers` worker processes serving
// the ASGI twin; it picks uvloop and httptools when they are installed,
// as they are in the lab image.
func Uvicorn(workers int) Server {
	return Server{
		ID: fmt.Sprintf("uvicorn-%d", workers),
		Cmd: []string{"python3", "-m", "uvicorn", "--host", "127.0.0.1", "--port", strconv.Itoa(AppPort),
			"--workers", strconv.Itoa(workers), "--no-access-log", "asgiapp:app"},
	}
}

// Daphne is Daphne 4.0 (Django Channels' ASGI server, on Twisted) serving
// the ASGI twin in its one process: its send() queues a WebSocket
// message in Twisted's transport and returns at once. Twisted spools
// each request body past 100 KB into a temporary file before the app
// sees it; the files go to /dev/shm (ShmTempDir), not to the app role's
// 32 MiB /tmp, which 2 uploads of 16 MiB fill: there the app's write
// record failed (ENOSPC) and Daphne answered 500 to both.
func Daphne() Server {
	return Server{
		ID:  "daphne-1",
		Cmd: []string{"python3", "-m", "daphne", "--bind", "127.0.0.1", "--port", strconv.Itoa(AppPort), "asgiapp:app"},
		Env: []string{"TMPDIR=" + ShmTempDir},
	}
}

// Hypercorn is Hypercorn 0.13 with `workers` asyncio worker processes
// serving the ASGI twin (HTTP/1.1, HTTP/2 and WebSockets through h11,
// h2 and wsproto).
func Hypercorn(workers int) Server {
	return Server{
		ID: fmt.Sprintf("hypercorn-%d", workers),
		Cmd: []string{"python3", "-m", "hypercorn", "--bind", fmt.Sprintf("127.0.0.1:%d", AppPort),
			"--workers", strconv.Itoa(workers), "asgiapp:app"},
	}
}

// Waitress is waitress 2.1 (Pylons' pure-Python WSGI server; Heroku's
// advice for an app with no buffering proxy in front) serving app.py from
// its one process with `threads` threads. Its asyncore loop owns the
// sockets: a thread hands the response to its connection's output
// buffer, which spills past 1 MiB (outbuf_overflow) into a temporary
// file, and waits only while that buffer holds outbuf_high_watermark
// (16 MiB). The files go to /dev/shm (ShmTempDir), not to the app
// role's 32 MiB /tmp, which 2 slow readers of 16 MiB fill: there
// waitress cut one of them at 11.3 MB (ENOSPC in its buffers).
func Waitress(threads int) Server {
	return Server{
		ID: fmt.Sprintf("waitress-%d", threads),
		Cmd: []string{"python3", "-m", "waitress", "--listen", fmt.Sprintf("127.0.0.1:%d", AppPort),
			"--threads", strconv.Itoa(threads), "app:application"},
		Env: []string{"TMPDIR=" + ShmTempDir},
	}
}

// ShmTempDir is where the servers that spill to temporary files write
// them (TMPDIR): waitress's output buffers and Twisted's request bodies
// under Daphne. It is the app container's /dev/shm, Docker's 64 MiB
// tmpfs, whose pages count against the app's memory limit as /tmp's do.
const ShmTempDir = "/dev/shm"

// GunicornEventlet is Gunicorn with `workers` eventlet workers (each takes
// up to Gunicorn's default 1,000 connections, as gevent's do).
func GunicornEventlet(workers int) Server {
	return Server{
		ID: fmt.Sprintf("gunicorn-eventlet-%d", workers),
		Cmd: []string{"python3", "-m", "gunicorn", "--bind", fmt.Sprintf("127.0.0.1:%d", AppPort),
			"--worker-class", "eventlet", "--workers", strconv.Itoa(workers), "app:application"},
	}
}

// ModWSGIConf is mod_wsgi's Apache configuration in the lab image
// (wsgiapp/modwsgi.conf); absolute, as apache2 -f reads a relative path
// from its ServerRoot.
const ModWSGIConf = wsgiapp.Dir + "/modwsgi.conf"

// ModWSGI is mod_wsgi 4.9 in daemon mode under Apache httpd 2.4's event
// MPM (wsgiapp/modwsgi.conf): 2 daemon processes of 1 thread each run
// app.py, behind Apache's own threads, which take the connections. Apache
// runs as the app role's user and writes only under /tmp/apache2.
func ModWSGI() Server {
	return Server{
		ID:  "modwsgi-2x1",
		Cmd: []string{"sh", "-c", "mkdir -p /tmp/apache2 && exec apache2 -f \"$0\" -DFOREGROUND", ModWSGIConf},
	}
}

// uWSGI's coroutine loops (UWSGILoop).
const (
	LoopGevent  = "gevent"
	LoopAsyncio = "asyncio"
)

// UWSGILoop is uWSGI with a master and `processes` workers, each running
// `cores` requests at once in a coroutine loop (LoopGevent: --gevent with
// monkey patching; LoopAsyncio: --asyncio on greenlets), speaking HTTP
// itself (--http-socket) and serving app.py's generator body.
func UWSGILoop(processes int, loop string, cores int) (Server, error) {
	plugins := "python311,logfile"
	var flags []string
	switch loop {
	case LoopGevent:
		plugins += ",gevent_python311"
		flags = []string{"--gevent", strconv.Itoa(cores), "--gevent-monkey-patch"}
	case LoopAsyncio:
		plugins += ",greenlet_python311,asyncio_python311"
		flags = []string{"--asyncio", strconv.Itoa(cores), "--greenlet"}
	default:
		return Server{}, fmt.Errorf("podspec: uWSGI loop %q: want %q or %q", loop, LoopGevent, LoopAsyncio)
	}
	if processes < 1 || cores < 1 {
		return Server{}, fmt.Errorf("podspec: uWSGI %s loop of %d processes x %d cores: want 1 or more of each", loop, processes, cores)
	}
	return Server{ID: fmt.Sprintf("uwsgi-%d-%s-%d", processes, loop, cores), Cmd: append(uwsgiCmd(plugins, processes), flags...)}, nil
}

// uwsgiCmd is the matrix's uWSGI command line with plugins loaded: a
// master and `processes` workers speaking HTTP themselves on AppPort,
// serving app.py, requests logged to a file in the container.
func uwsgiCmd(plugins string, processes int) []string {
	return []string{"uwsgi", "--plugin", plugins, "--http-socket", fmt.Sprintf("127.0.0.1:%d", AppPort),
		"--wsgi-file", "app.py", "--master", "--processes", strconv.Itoa(processes), "--need-app", "--die-on-term",
		"--req-logger", "file:/tmp/uwsgi-requests.log"}
}

// UWSGI body kinds: how the app hands /large to the server.
const (
	BodyGenerator = "generator"
	BodyFile      = "file"
)

// UWSGI is uWSGI with a master and `processes` sync workers speaking HTTP
// themselves (--http-socket, no router in between, as Gunicorn does),
// the app handing /large as body (BodyGenerator or BodyFile, through
// wsgi.file_wrapper), with `offload` offload threads per worker (0: none).
func UWSGI(processes int, body string, offload int) (Server, error) {
	if body != BodyGenerator && body != BodyFile {
		return Server{}, fmt.Errorf("podspec: uWSGI body %q: want %q or %q", body, BodyGenerator, BodyFile)
	}
	if offload < 0 {
		return Server{}, fmt.Errorf("podspec: uWSGI offload threads %d: want 0 or more", offload)
	}
	id := fmt.Sprintf("uwsgi-%d-%s", processes, body)
	cmd := uwsgiCmd("python311,logfile", processes)
	if offload > 0 {
		id += fmt.Sprintf("-offload-%d", offload)
		cmd = append(cmd, "--offload-threads", strconv.Itoa(offload))
	}
	return Server{ID: id, Cmd: cmd, Env: []string{"LAB_LARGE_BODY=" + body}}, nil
}

// GunicornTimeout is Gunicorn's server s with --timeout secs: the
// arbiter kills a worker that has not notified it for that long (a sync
// worker notifies only between requests). It fails on a server that is
// not Gunicorn's.
func GunicornTimeout(s Server, secs int) (Server, error) {
	if len(s.Cmd) < 3 || s.Cmd[0] != "python3" || s.Cmd[2] != "gunicorn" {
		return Server{}, fmt.Errorf("podspec: --timeout is Gunicorn's; server %s runs %q", s.ID, s.Cmd)
	}
	if secs < 1 {
		return Server{}, fmt.Errorf("podspec: Gunicorn --timeout %d: want 1 second or more", secs)
	}
	cmd := slices.Clone(s.Cmd)
	// Options go before the app, the command line's last word.
	cmd = slices.Insert(cmd, len(cmd)-1, "--timeout", strconv.Itoa(secs))
	return Server{ID: fmt.Sprintf("%s-timeout-%d", s.ID, secs), Cmd: cmd, Env: slices.Clone(s.Env)}, nil
}

// UWSGIHarakiri is uWSGI's server s with --harakiri secs: the master
// kills a worker whose request has run that long. It fails on a server
// that is not uWSGI's.
func UWSGIHarakiri(s Server, secs int) (Server, error) {
	if len(s.Cmd) == 0 || s.Cmd[0] != "uwsgi" {
		return Server{}, fmt.Errorf("podspec: --harakiri is uWSGI's; server %s runs %q", s.ID, s.Cmd)
	}
	if secs < 1 {
		return Server{}, fmt.Errorf("podspec: uWSGI --harakiri %d: want 1 second or more", secs)
	}
	cmd := append(slices.Clone(s.Cmd), "--harakiri", strconv.Itoa(secs))
	return Server{ID: fmt.Sprintf("%s-harakiri-%d", s.ID, secs), Cmd: cmd, Env: slices.Clone(s.Env)}, nil
}

// WithFlag is server s with one more command-line option, flag value,
// before its app (the command line's last word), named
// <s.ID>-<flag without its dashes>-<value>: a connection limit moved
// (Gunicorn's --worker-connections, Uvicorn's --limit-concurrency and
// --backlog). It fails on a flag that is not --name, a value below 1, or
// a server with no app word.
func WithFlag(s Server, flag string, value int) (Server, error) {
	name := strings.TrimPrefix(flag, "--")
	if !strings.HasPrefix(flag, "--") || name == "" || strings.ContainsAny(name, " =") {
		return Server{}, fmt.Errorf("podspec: flag %q: want --name", flag)
	}
	if value < 1 {
		return Server{}, fmt.Errorf("podspec: %s %d: want 1 or more", flag, value)
	}
	if len(s.Cmd) < 2 {
		return Server{}, fmt.Errorf("podspec: server %s has no app word to put %s before", s.ID, flag)
	}
	cmd := slices.Insert(slices.Clone(s.Cmd), len(s.Cmd)-1, flag, strconv.Itoa(value))
	return Server{ID: fmt.Sprintf("%s-%s-%d", s.ID, name, value), Cmd: cmd, Env: slices.Clone(s.Env)}, nil
}

// The frameworks the framework cells run (wsgiapp/flaskapp.py,
// djangoapp.py and fastapiapp.py): app.py's /fast, /large and /upload,
// and its write record, written again in each.
const (
	Flask   = "flask"
	Django  = "django"
	FastAPI = "fastapi"
)

// Frameworks are the framework cells' frameworks, in order.
var Frameworks = []string{Flask, Django, FastAPI}

// frameworkApps are each framework's app word in place of the
// framework-free app's: a WSGI framework's for app:application, an ASGI
// one's for asgiapp:app.
var frameworkApps = map[string]struct{ replaces, app string }{
	Flask:   {"app:application", "flaskapp:app"},
	Django:  {"app:application", "djangoapp:application"},
	FastAPI: {"asgiapp:app", "fastapiapp:app"},
}

// WithFramework is server s serving framework's app instead of the
// framework-free one, named <s.ID>-<framework>. It fails on a framework
// it does not know, and on a server whose app word is not the one the
// framework replaces: a WSGI framework needs a WSGI server of app.py, an
// ASGI one a server of asgiapp.py.
func WithFramework(s Server, framework string) (Server, error) {
	fa, ok := frameworkApps[framework]
	if !ok {
		return Server{}, fmt.Errorf("podspec: framework %q: want one of %q", framework, Frameworks)
	}
	if len(s.Cmd) == 0 || s.Cmd[len(s.Cmd)-1] != fa.replaces {
		return Server{}, fmt.Errorf("podspec: framework %s replaces the app %s; server %s runs %q", framework, fa.replaces, s.ID, s.Cmd)
	}
	cmd := slices.Clone(s.Cmd)
	cmd[len(cmd)-1] = fa.app
	return Server{ID: s.ID + "-" + framework, Cmd: cmd, Env: slices.Clone(s.Env)}, nil
}

// GunicornReleases are the Gunicorn releases the image holds beside its
// installed one (23.0.0, article A's), each by the directory that
// fixtures/image/build.sh unpacked it into: bookworm's own 20.1.0
// (python3-gunicorn 20.1.0-6+deb12u1), which PYTHONPATH puts ahead.
var GunicornReleases = map[string]string{
	GunicornBookworm: "/opt/gunicorn-20.1.0",
}

// GunicornBookworm is Debian bookworm's own Gunicorn release; the image's
// installed one is GunicornInstalled.
const (
	GunicornBookworm  = "20.1.0"
	GunicornInstalled = "23.0.0"
)

// WithGunicorn is Gunicorn's server s run by release instead of the
// installed one, named <s.ID>-<release>: PYTHONPATH puts that release's
// package (GunicornReleases) ahead of the installed one. It fails on a
// server that is not Gunicorn's and on a release the image does not hold.
func WithGunicorn(s Server, release string) (Server, error) {
	dir, ok := GunicornReleases[release]
	if !ok {
		return Server{}, fmt.Errorf("podspec: Gunicorn release %q: the image holds %q beside %s", release, slices.Sorted(maps.Keys(GunicornReleases)), GunicornInstalled)
	}
	if len(s.Cmd) < 3 || s.Cmd[0] != "python3" || s.Cmd[2] != "gunicorn" {
		return Server{}, fmt.Errorf("podspec: Gunicorn release %s: server %s runs %q, not Gunicorn", release, s.ID, s.Cmd)
	}
	if slices.ContainsFunc(s.Env, func(e string) bool { return strings.HasPrefix(e, "PYTHONPATH=") }) {
		return Server{}, fmt.Errorf("podspec: Gunicorn release %s: server %s sets PYTHONPATH already", release, s.ID)
	}
	return Server{ID: s.ID + "-" + release, Cmd: slices.Clone(s.Cmd), Env: append(slices.Clone(s.Env), "PYTHONPATH="+dir)}, nil
}
