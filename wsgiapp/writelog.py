"""The write record shared by the WSGI app (app.py) and its ASGI twin
(asgiapp.py): one JSON line per /large response, appended to
LAB_WRITES_LOG and keyed by the client's X-Lab-Id header, so the harness
can match it to its download.

write_ns is how long the server held the response: from the app handing
out its first block (or the file) to the server having taken the last
one (generator resumed, send() returned, or the file closed). complete
says the server took the whole body: for a file, that it closed it after
taking it (whether the client got every byte is the client's record).
For a POST /upload (via "upload"), write_ns is the time the app took to
read the request body, and bytes what it read.

LAB_LEAK_FDS=1 makes the app a broken one on purpose: each record also
opens /dev/null and never closes it, one descriptor leaked per slow
client, which the lab's leak check (engine's reset cells) must catch.
"""

import json
import os
import time

WRITES_LOG = os.environ.get("LAB_WRITES_LOG", "/tmp/lab-writes.jsonl")

LEAK_FDS = os.environ.get("LAB_LEAK_FDS", "") == "1"
_leaked = []


class Clock:
    """The start of one response's write."""

    def __init__(self):
        self.mono_ns = time.monotonic_ns()
        self.wall_ns = time.time_ns()


def record(request_id, clock, sent, size, complete, via):
    end_ns = time.monotonic_ns()
    start = clock or Clock()
    line = json.dumps({
        "id": request_id,
        "pid": os.getpid(),
        "bytes": sent,
        "size": size,
        "complete": complete and sent == size,
        "start_unix_ns": start.wall_ns,
        "write_ns": end_ns - start.mono_ns,
        "via": via,
    }) + "\n"
    # One O_APPEND write per line keeps lines whole across workers.
    fd = os.open(WRITES_LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)
    if LEAK_FDS:
        _leaked.append(os.open(os.devnull, os.O_RDONLY))
