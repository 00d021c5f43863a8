"""app.py's /fast, /large and /upload written in Flask (the framework
cells of the resilience matrix): the same bodies, sizes and write record
(writelog.py), through Flask's routing, request and response objects.

/fast   the 12-byte JSON body, a Flask Response.
/large  app.py's timed body (?size=BYTES, 16 MiB by default) as a
        streamed Response with its Content-Length: Werkzeug iterates it
        and closes it, so the write record is app.py's own.
/upload (POST) request.stream read to its end in 64 KiB reads and
        discarded, answered {"read": BYTES}.
"""

from flask import Flask, Response, jsonify, request

import writelog
from app import DEFAULT_LARGE, FAST_BODY, MAX_LARGE, TimedBody, read_to_end

app = Flask(__name__)


@app.get("/fast")
def fast():
    return Response(FAST_BODY, mimetype="application/json")


@app.get("/large")
def large():
    try:
        size = int(request.args.get("size", DEFAULT_LARGE))
    except ValueError:
        size = -1
    if not 0 <= size <= MAX_LARGE:
        return jsonify(error="size must be a whole number of bytes from 0 to %d" % MAX_LARGE), 400
    body = TimedBody(size, request.headers.get("X-Lab-Id", ""))
    return Response(body, mimetype="application/octet-stream", headers={"Content-Length": str(size)})


@app.post("/upload")
def upload():
    size = request.content_length or 0
    if not 0 <= size <= MAX_LARGE:
        return jsonify(error="Content-Length must be between 0 and %d" % MAX_LARGE), 400
    clock = writelog.Clock()
    read = read_to_end(request.stream.read, size)
    writelog.record(request.headers.get("X-Lab-Id", ""), clock, read, size, read == size, "upload")
    return jsonify(read=read)
