package podspec

import (
	"fmt"
	"strconv"
)

// Article B's servers serve wsgiapp/articleb.py (Django). blockMs, when
// above 0, makes each request sleep that long in time.sleep first.

// BlockEnv is the environment that sets the view's blocking call.
func BlockEnv(blockMs int) []string { return []string{"LAB_BLOCK_MS=" + strconv.Itoa(blockMs)} }

// GunicornB is Gunicorn with one worker of class ("sync", "gevent",
// "gthread"); threads applies to gthread.
func GunicornB(class string, threads, blockMs int) Server {
	cmd := []string{"python3", "-m", "gunicorn", "--bind", fmt.Sprintf("127.0.0.1:%d", AppPort),
		"--workers", "1", "--worker-class", class}
	id := "gunicorn-" + class
	if class == "gthread" {
		cmd = append(cmd, "--threads", strconv.Itoa(threads))
		id = fmt.Sprintf("gunicorn-gthread-%d", threads)
	}
	return Server{ID: id, Cmd: append(cmd, "articleb:application"), Env: BlockEnv(blockMs)}
}

// UWSGIB is uWSGI with the article's flags (--http, one process, a listen
// queue of 1000) in one of three modes: "sync"; "async-ugreen" (--async
// 100 --ugreen, the article's async arm); "gevent" (--gevent 100 with
// monkey patching, beyond the article). Debian's uWSGI is modular, so
// every plugin is loaded by name.
func UWSGIB(mode string, blockMs int) (Server, error) {
	plugins := "http,python311,logfile"
	var extra []string
	switch mode {
	case "sync":
	case "async-ugreen":
		plugins += ",ugreen"
		extra = []string{"--async", "100", "--ugreen"}
	case "gevent":
		plugins += ",gevent_python311"
		extra = []string{"--gevent", "100", "--gevent-monkey-patch"}
	default:
		return Server{}, fmt.Errorf("podspec: uWSGI mode %q: want sync, async-ugreen or gevent", mode)
	}
	// uWSGI logs every request by default, as in the article; the lines
	// go to a file in the container, so the server still pays for them
	// but the engine does not relay thousands of lines a second through
	// its log driver, on a core the server needs. Errors stay on stderr.
	cmd := append([]string{"uwsgi", "--plugin", plugins, "--http", fmt.Sprintf("127.0.0.1:%d", AppPort),
		"--wsgi-file", "articleb.py", "--process", "1", "-l", "1000",
		"--req-logger", "file:/tmp/uwsgi-requests.log"}, extra...)
	return Server{ID: "uwsgi-" + mode, Cmd: cmd, Env: BlockEnv(blockMs)}, nil
}
