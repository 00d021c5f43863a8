"""Framework-free WSGI app of article A.

/fast   a 12-byte JSON body, produced at once.
/large  a body of known Content-Length made of one prepared 64 KiB block
        repeated (16 MiB unless ?size=BYTES says otherwise).

For every /large response the app records how long the server took to
take the body: from the generator handing out its first block to the
generator being resumed after its last one, which is when the server has
handed that block to the OS (a sync worker's sendall has returned). One
JSON line per response is appended to LAB_WRITES_LOG, keyed by the
client's X-Lab-Id header, so the harness can match it to its download.
"""

import json
import os
import time
from urllib.parse import parse_qs

FAST_BODY = b'{"ok": true}'
assert len(FAST_BODY) == 12

BLOCK = bytes(i % 251 for i in range(64 * 1024))
DEFAULT_LARGE = 16 * 1024 * 1024
MAX_LARGE = 1024 * 1024 * 1024

WRITES_LOG = os.environ.get("LAB_WRITES_LOG", "/tmp/lab-writes.jsonl")


class TimedBody:
    """Iterable body that records its write duration when it ends."""

    def __init__(self, size, request_id):
        self.size = size
        self.request_id = request_id
        self.sent = 0
        self.start_ns = None
        self.start_wall_ns = None
        self.recorded = False

    def __iter__(self):
        full, rest = divmod(self.size, len(BLOCK))
        self.start_ns = time.monotonic_ns()
        self.start_wall_ns = time.time_ns()
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
        end_ns = time.monotonic_ns()
        start_ns = self.start_ns if self.start_ns is not None else end_ns
        line = json.dumps({
            "id": self.request_id,
            "pid": os.getpid(),
            "bytes": self.sent,
            "size": self.size,
            "complete": complete and self.sent == self.size,
            "start_unix_ns": self.start_wall_ns or time.time_ns(),
            "write_ns": end_ns - start_ns,
        }) + "\n"
        # One O_APPEND write per line keeps lines whole across workers.
        fd = os.open(WRITES_LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)


def _bad_request(start_response, message):
    body = json.dumps({"error": message}).encode()
    start_response("400 Bad Request", [
        ("Content-Type", "application/json"),
        ("Content-Length", str(len(body))),
    ])
    return [body]


def application(environ, start_response):
    path = environ.get("PATH_INFO", "")
    if path == "/fast":
        start_response("200 OK", [
            ("Content-Type", "application/json"),
            ("Content-Length", str(len(FAST_BODY))),
        ])
        return [FAST_BODY]
    if path == "/large":
        query = parse_qs(environ.get("QUERY_STRING", ""))
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
        return TimedBody(size, request_id)
    body = b'{"error": "not found"}'
    start_response("404 Not Found", [
        ("Content-Type", "application/json"),
        ("Content-Length", str(len(body))),
    ])
    return [body]
