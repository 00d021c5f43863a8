"""Framework-free WSGI app of article A.

/fast   a 12-byte JSON body, produced at once.
/large  a body of known Content-Length made of one prepared 64 KiB block
        repeated (16 MiB unless ?size=BYTES says otherwise).
/upload (POST) reads the request body to its end in 64 KiB reads,
        discards it, and answers {"read": BYTES}.
/events a text/event-stream of ?n= events (50) ?gap_ms= apart (100), each
        "data: <send time, ns since the epoch>"; ?xaccel=no adds the
        X-Accel-Buffering: no header that turns NGINX's buffering off for
        this response.
/hang   sleeps ?s= seconds (0 to 60) in Python (time.sleep), then answers
        as /large does (?size=): a handler that outlives the server's
        worker timeout.
/ws     under gevent-websocket's worker (environ["wsgi.websocket"]), the
        ASGI twin's /ws: ?count= binary messages of ?size= bytes, each
        opening with its sequence number, pushed as fast as send()
        returns, then the consumer's close awaited.

For every /large response the app records how long the server took to
take the body (writelog.py): from the generator handing out its first
block to the generator being resumed after its last one, which is when
the server has handed that block to the OS (a sync worker's sendall has
returned); or, for a file (LAB_LARGE_BODY=file), from handing the file to
the server to the server closing it.
"""

import json
import os
import time
from urllib.parse import parse_qs

import writelog

FAST_BODY = b'{"ok": true}'
assert len(FAST_BODY) == 12

BLOCK = bytes(i % 251 for i in range(64 * 1024))
DEFAULT_LARGE = 16 * 1024 * 1024
MAX_LARGE = 1024 * 1024 * 1024
# /hang's cap on ?s= (load bounds every run: engine.MaxHangS).
MAX_HANG_S = 60

# LAB_LARGE_BODY picks how /large hands its body to the server:
# "generator" (default) yields the blocks; "file" returns
# wsgi.file_wrapper over a file, which servers send with sendfile and
# uWSGI can give to its offload threads.
LARGE_BODY = os.environ.get("LAB_LARGE_BODY", "generator")
if LARGE_BODY not in ("generator", "file"):
    raise SystemExit("LAB_LARGE_BODY=%r: want generator or file" % LARGE_BODY)
FILES_DIR = os.environ.get("LAB_FILES_DIR", "/tmp")


class TimedBody:
    """Iterable body that records its write duration when it ends."""

    def __init__(self, size, request_id):
        self.size = size
        self.request_id = request_id
        self.sent = 0
        self.clock = None
        self.recorded = False

    def __iter__(self):
        full, rest = divmod(self.size, len(BLOCK))
        self.clock = writelog.Clock()
        for _ in range(full):
            yield BLOCK
            # Resumed: the server has written the previous block.
            self.sent += len(BLOCK)
        if rest:
            yield BLOCK[:rest]
            self.sent += rest
        self._record(complete=True)

    def close(self):
        # Called by the server after the response, also when the client went
        # away mid-body; an unfinished body is recorded as incomplete.
        if not self.recorded:
            self._record(complete=False)

    def _record(self, complete):
        self.recorded = True
        writelog.record(self.request_id, self.clock, self.sent, self.size, complete, "generator")


class TimedFile:
    """A file handed whole to the server as wsgi.file_wrapper(TimedFile):
    the server sends it (sendfile, or an offload thread) and then closes
    it, which records how long the response held the worker."""

    def __init__(self, path, size, request_id):
        self.f = open(path, "rb")
        self.size = size
        self.request_id = request_id
        self.clock = writelog.Clock()
        self.recorded = False

    def fileno(self):
        return self.f.fileno()

    def read(self, n=-1):
        return self.f.read(n)

    def close(self):
        # The server closes the file when it is done with it: after its
        # sendfile loop, or at once when an offload thread took the file.
        # Whether the client got it all is the client's to say; complete
        # here means the server took the whole file.
        self.f.close()
        if not self.recorded:
            self.recorded = True
            writelog.record(self.request_id, self.clock, self.size, self.size, True, "file")


def body_file(size):
    """A file of size bytes of BLOCK repeated, made once per size in
    FILES_DIR (LAB_LARGE_BODY=file makes the one of the default size at
    import, before the server takes requests)."""
    path = os.path.join(FILES_DIR, "large-%d.bin" % size)
    if not os.path.exists(path):
        tmp = "%s.%d" % (path, os.getpid())
        try:
            with open(tmp, "wb") as f:
                full, rest = divmod(size, len(BLOCK))
                for _ in range(full):
                    f.write(BLOCK)
                f.write(BLOCK[:rest])
            os.replace(tmp, path)
        except OSError:
            # FILES_DIR is the app's tmpfs (32 MiB, counted in its memory):
            # leave no half-written file behind.
            if os.path.exists(tmp):
                os.remove(tmp)
            raise
    return path


if LARGE_BODY == "file":
    body_file(DEFAULT_LARGE)


def _bad_request(start_response, message):
    body = json.dumps({"error": message}).encode()
    start_response("400 Bad Request", [
        ("Content-Type", "application/json"),
        ("Content-Length", str(len(body))),
    ])
    return [body]


MAX_EVENTS = 1000
MAX_EVENT_GAP_MS = 1000


def _int_arg(query, name, default, low, high):
    """query's whole-number argument name within [low, high], default when
    absent; ValueError names it and the accepted range."""
    if name not in query:
        return default
    try:
        v = int(query[name][0])
    except ValueError:
        v = None
    if v is None or not low <= v <= high:
        raise ValueError("%s must be a whole number from %d to %d" % (name, low, high))
    return v


def read_to_end(read, size):
    """Read a request body of size bytes through read(n), in reads of at
    most len(BLOCK), discarding it; the bytes read (fewer when the client
    went away). The framework apps read theirs the same way."""
    got = 0
    while got < size:
        chunk = read(min(len(BLOCK), size - got))
        if not chunk:
            break
        got += len(chunk)
    return got


def upload(environ, start_response):
    """Read the body to its end and discard it; record how long reading
    took (via "upload": write_ns is the body's read time)."""
    try:
        size = int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return _bad_request(start_response, "Content-Length must be a whole number")
    if not 0 <= size <= MAX_LARGE:
        return _bad_request(start_response, "Content-Length must be between 0 and %d" % MAX_LARGE)
    clock = writelog.Clock()
    read = read_to_end(environ["wsgi.input"].read, size)
    writelog.record(environ.get("HTTP_X_LAB_ID", ""), clock, read, size, read == size, "upload")
    body = json.dumps({"read": read}).encode()
    start_response("200 OK", [
        ("Content-Type", "application/json"),
        ("Content-Length", str(len(body))),
    ])
    return [body]


def events(environ, start_response):
    query = parse_qs(environ.get("QUERY_STRING", ""))
    try:
        n = _int_arg(query, "n", 50, 1, MAX_EVENTS)
        gap = _int_arg(query, "gap_ms", 100, 0, MAX_EVENT_GAP_MS)
    except ValueError as e:
        return _bad_request(start_response, str(e))
    headers = [("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache")]
    if query.get("xaccel") == ["no"]:
        headers.append(("X-Accel-Buffering", "no"))
    start_response("200 OK", headers)

    def stream():
        for k in range(n):
            if k:
                time.sleep(gap / 1000)
            yield ("id: %d\ndata: %d\n\n" % (k, time.time_ns())).encode()
    return stream()


def ws(environ, start_response):
    """Push the messages /ws's query asks for (asgiapp.py's /ws)."""
    sock = environ.get("wsgi.websocket")
    if sock is None:
        return _bad_request(start_response, "/ws takes a WebSocket: run under gevent-websocket's worker")
    query = parse_qs(environ.get("QUERY_STRING", ""))
    try:
        count = _int_arg(query, "count", 256, 1, 1 << 16)
        size = _int_arg(query, "size", 64 * 1024, 8, 1 << 20)
    except ValueError:
        sock.close(1008)
        return []
    message = bytearray(BLOCK[:size] if size <= len(BLOCK) else size)
    clock, sent = writelog.Clock(), 0
    try:
        for seq in range(count):
            message[:8] = seq.to_bytes(8, "big")
            sock.send(bytes(message), binary=True)
            sent += size
    except Exception:  # the consumer went away; the record says how far
        pass
    writelog.record(environ.get("HTTP_X_LAB_ID", ""), clock, sent, count * size, sent == count * size, "ws")
    try:
        while sock.receive() is not None:  # None: the consumer closed
            pass
    except Exception:
        pass
    return []


def application(environ, start_response):
    path = environ.get("PATH_INFO", "")
    if path == "/ws":
        return ws(environ, start_response)
    if path == "/fast":
        start_response("200 OK", [
            ("Content-Type", "application/json"),
            ("Content-Length", str(len(FAST_BODY))),
        ])
        return [FAST_BODY]
    if path == "/upload" and environ.get("REQUEST_METHOD") == "POST":
        return upload(environ, start_response)
    if path == "/events":
        return events(environ, start_response)
    if path in ("/large", "/hang"):
        query = parse_qs(environ.get("QUERY_STRING", ""))
        if path == "/hang":
            try:
                secs = _int_arg(query, "s", 0, 0, MAX_HANG_S)
            except ValueError as e:
                return _bad_request(start_response, str(e))
            # Blocking on purpose: a handler stuck in a call that does not
            # yield (under gevent's monkey patching, time.sleep does).
            time.sleep(secs)
        size = DEFAULT_LARGE
        if "size" in query:
            try:
                size = int(query["size"][0])
            except ValueError:
                return _bad_request(start_response, "size must be a whole number of bytes")
            if not 0 <= size <= MAX_LARGE:
                return _bad_request(start_response, "size must be between 0 and %d" % MAX_LARGE)
        request_id = environ.get("HTTP_X_LAB_ID", "")
        start_response("200 OK", [
            ("Content-Type", "application/octet-stream"),
            ("Content-Length", str(size)),
        ])
        if LARGE_BODY == "file":
            wrapper = environ.get("wsgi.file_wrapper")
            if wrapper is None:
                raise RuntimeError("LAB_LARGE_BODY=file but the server has no wsgi.file_wrapper")
            return wrapper(TimedFile(body_file(size), size, request_id), len(BLOCK))
        return TimedBody(size, request_id)
    body = b'{"error": "not found"}'
    start_response("404 Not Found", [
        ("Content-Type", "application/json"),
        ("Content-Length", str(len(body))),
    ])
    return [body]
