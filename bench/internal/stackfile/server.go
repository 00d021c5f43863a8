package stackfile

import (
	"fmt"
	"strconv"
	"strings"
)

// ServerInfo is what the lab reads off a server command: the program, its
// worker model and the concurrency it declares.
type ServerInfo struct {
	// Program is gunicorn, uwsgi or uvicorn; empty when the command runs
	// something else.
	Program string
	// Class is the worker model: gunicorn's worker class (sync, gthread,
	// gevent, eventlet, uvicorn), uWSGI's (sync, async, gevent) or
	// uvicorn's (asyncio).
	Class            string
	Workers, Threads int
	// Capacity is how many requests the command lets the server hold at
	// once (workers x threads, processes x async cores); 0 when it
	// declares no limit the lab can read.
	Capacity int
	// Basis says where Capacity comes from.
	Basis string
}

// ReadServer reads a server command: [gunicorn ...], [python3 -m gunicorn
// ...], [uwsgi ...] or [uvicorn ...].
func ReadServer(cmd []string) ServerInfo {
	prog, rest := program(cmd)
	if prog == "" {
		return ServerInfo{}
	}
	args := flags(rest)
	num := func(def int, names ...string) int {
		for _, n := range names {
			if v, ok := args[n]; ok {
				if i, err := strconv.Atoi(v); err == nil && i > 0 {
					return i
				}
			}
		}
		return def
	}
	s := ServerInfo{Program: prog}
	switch prog {
	case "gunicorn":
		s.Workers, s.Threads = num(1, "--workers", "-w"), num(1, "--threads")
		s.Class = args["--worker-class"]
		if s.Class == "" {
			s.Class = args["-k"]
		}
		switch {
		case s.Class == "" || s.Class == "sync":
			s.Class = "sync"
			if s.Threads > 1 { // Gunicorn switches sync to gthread
				s.Class = "gthread"
			}
		case strings.Contains(strings.ToLower(s.Class), "uvicorn"):
			s.Class = "uvicorn"
		}
		switch s.Class {
		case "sync":
			s.Capacity, s.Basis = s.Workers, fmt.Sprintf("--workers %d, one request each", s.Workers)
		case "gthread":
			s.Capacity, s.Basis = s.Workers*s.Threads, fmt.Sprintf("--workers %d x --threads %d", s.Workers, s.Threads)
		default:
			s.Basis = fmt.Sprintf("%s workers declare no limit the lab reads", s.Class)
		}
	case "uwsgi":
		s.Workers, s.Threads = num(1, "--processes", "-p", "--workers"), num(1, "--threads")
		s.Class = "sync"
		cores := num(0, "--async", "--gevent")
		switch {
		case cores > 0:
			s.Class = "async"
			if _, ok := args["--gevent"]; ok {
				s.Class = "gevent"
			}
			s.Capacity, s.Basis = s.Workers*cores, fmt.Sprintf("--processes %d x %d async cores", s.Workers, cores)
		default:
			s.Capacity, s.Basis = s.Workers*s.Threads, fmt.Sprintf("--processes %d x --threads %d", s.Workers, s.Threads)
		}
	case "uvicorn":
		s.Workers, s.Class = num(1, "--workers"), "asyncio"
		if l := num(0, "--limit-concurrency"); l > 0 {
			s.Capacity, s.Basis = s.Workers*l, fmt.Sprintf("--workers %d x --limit-concurrency %d", s.Workers, l)
		} else {
			s.Basis = "no --limit-concurrency"
		}
	default:
		return ServerInfo{Basis: "a command the lab does not read"}
	}
	return s
}

// Describe is the server in a few words: "2 sync workers", "1 gthread
// worker x 4 threads", "uWSGI, 2 processes".
func (s ServerInfo) Describe() string {
	plural := func(n int, w string) string {
		if n == 1 {
			return fmt.Sprintf("%d %s", n, w)
		}
		if strings.HasSuffix(w, "s") {
			return fmt.Sprintf("%d %ses", n, w)
		}
		return fmt.Sprintf("%d %ss", n, w)
	}
	switch s.Program {
	case "gunicorn":
		if s.Class == "gthread" {
			return plural(s.Workers, "gthread worker") + " x " + plural(s.Threads, "thread")
		}
		return plural(s.Workers, s.Class+" worker")
	case "uwsgi":
		if s.Class != "sync" {
			return "uWSGI, " + plural(s.Workers, s.Class+" process")
		}
		if s.Threads > 1 {
			return "uWSGI, " + plural(s.Workers, "process") + " x " + plural(s.Threads, "thread")
		}
		return "uWSGI, " + plural(s.Workers, "sync process")
	case "uvicorn":
		return "Uvicorn, " + plural(s.Workers, "worker")
	}
	return "the server"
}

// flags reads "--name value", "--name=value", "-n value" and "-n4"
// pairs; a flag followed by another flag (or nothing) has the value "". A
// negative number is a value ("--threads -4"), never a flag.
func flags(args []string) map[string]string {
	out := map[string]string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			continue
		}
		if k, v, ok := strings.Cut(a, "="); ok {
			out[k] = v
			continue
		}
		if len(a) > 2 && a[1] != '-' && isNumber(a[2:]) { // -w4
			out[a[:2]] = a[2:]
			continue
		}
		if i+1 < len(args) && (!strings.HasPrefix(args[i+1], "-") || isNumber(args[i+1])) {
			out[a] = args[i+1]
			i++
			continue
		}
		out[a] = ""
	}
	return out
}

func isNumber(s string) bool {
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

// AppRoot is where an app directory lands in the image built for it.
const AppRoot = "/srv/app"

// Command is the app's server command as the lab runs it: the program
// bound to 127.0.0.1:port, serving Module from AppRoot, with the team's
// arguments.
func (a App) Command(port int) []string {
	bind := fmt.Sprintf("127.0.0.1:%d", port)
	args := a.Server[1:]
	switch a.Server[0] {
	case "gunicorn":
		return append(append([]string{"python3", "-m", "gunicorn", "--bind", bind}, args...), a.Module)
	case "uvicorn":
		return append(append([]string{"python3", "-m", "uvicorn", "--host", "127.0.0.1", "--port", strconv.Itoa(port)}, args...), a.Module)
	default: // uwsgi
		return append([]string{"uwsgi", "--plugin", "python311", "--http-socket", bind, "--pythonpath", AppRoot,
			"--module", a.Module, "--need-app", "--die-on-term"}, args...)
	}
}
