"""The ASGI twin of app.py, for Uvicorn alone and Gunicorn's
UvicornWorker: the same /fast (a 12-byte JSON body), /hang (?s= seconds
of time.sleep, which blocks the event loop, then /large's answer) and
/large (a body of
known Content-Length made of one prepared 64 KiB block repeated, 16 MiB
unless ?size=BYTES says otherwise), POST /upload (the body read to its
end and discarded, answered {"read": BYTES}), and the same write record
(writelog.py): from the first block handed to send() to the last send()
returning. Uvicorn's send() waits while its transport holds more than its
high-water mark (64 KiB), so the record follows the client's pace as a
sync worker's sendall does, but for what the transport's buffer holds.
Uvicorn 0.17's send() returns quietly once the client has gone, so the
app watches receive() for http.disconnect, sends no more after it, and
records such a body as incomplete.

/ws is a WebSocket that pushes ?count= binary messages of ?size= bytes,
each opening with its sequence number (8 bytes, big-endian, from 0), as
fast as send() returns, then waits for the consumer to close it, as a
feed that stays open does. Its write record runs from the first send()
to the last returning: a server whose send() waits while its transport
is full (backpressure) follows the consumer's pace; one whose send()
only queues returns at once and holds the rest in its memory until the
consumer reads it. (Closing at once instead, Daphne's autobahn drops the
connection 1 s after its close frame went unanswered, and with it every
message still queued.)
"""

import asyncio
import json
import time
from urllib.parse import parse_qs

import writelog
from app import BLOCK, DEFAULT_LARGE, FAST_BODY, MAX_HANG_S, MAX_LARGE, _int_arg

# The caps on /ws's ?count= and ?size= (load.MaxWSMessages, MaxWSMessageSize).
MAX_WS_MESSAGES = 1 << 16
MAX_WS_SIZE = 1 << 20


async def _respond(send, status, body, ctype="application/json"):
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", ctype.encode()),
        (b"content-length", str(len(body)).encode()),
    ]})
    await send({"type": "http.response.body", "body": body})


async def _lifespan(receive, send):
    while True:
        msg = await receive()
        if msg["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif msg["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


async def _upload(scope, receive, send):
    """Read the body to its end; record its read time (via "upload")."""
    headers = dict(scope["headers"])
    try:
        size = int(headers.get(b"content-length", b"0"))
    except ValueError:
        return await _respond(send, 400, b'{"error": "Content-Length must be a whole number"}')
    clock, read, more = writelog.Clock(), 0, True
    while more:
        msg = await receive()
        if msg["type"] == "http.disconnect":
            break
        read += len(msg.get("body", b""))
        more = msg.get("more_body", False)
    writelog.record(headers.get(b"x-lab-id", b"").decode(), clock, read, size, read == size, "upload")
    await _respond(send, 200, json.dumps({"read": read}).encode())


async def _ws(scope, receive, send):
    """Push the messages /ws's query asks for (module docstring)."""
    if (await receive())["type"] != "websocket.connect":
        return
    query = parse_qs(scope.get("query_string", b"").decode())
    try:
        count = int(query.get("count", ["256"])[0])
        size = int(query.get("size", [str(64 * 1024)])[0])
    except ValueError:
        count = size = 0
    if not (1 <= count <= MAX_WS_MESSAGES and 8 <= size <= MAX_WS_SIZE):
        # Before the accept, a close is the server's 403.
        return await send({"type": "websocket.close", "code": 1008})
    await send({"type": "websocket.accept"})
    request_id = dict(scope["headers"]).get(b"x-lab-id", b"").decode()
    message = bytearray(BLOCK[:size] if size <= len(BLOCK) else size)
    clock, sent = writelog.Clock(), 0
    try:
        for seq in range(count):
            message[:8] = seq.to_bytes(8, "big")
            await send({"type": "websocket.send", "bytes": bytes(message)})
            sent += size
    except Exception:  # the consumer went away; the record says how far
        pass
    writelog.record(request_id, clock, sent, count * size, sent == count * size, "ws")
    while (await receive())["type"] != "websocket.disconnect":
        pass


async def app(scope, receive, send):
    if scope["type"] == "lifespan":
        return await _lifespan(receive, send)
    if scope["type"] == "websocket":
        if scope["path"] == "/ws":
            return await _ws(scope, receive, send)
        return await send({"type": "websocket.close", "code": 1008})
    path = scope["path"]
    if path == "/fast":
        return await _respond(send, 200, FAST_BODY)
    if path == "/upload" and scope["method"] == "POST":
        return await _upload(scope, receive, send)
    if path not in ("/large", "/hang"):
        return await _respond(send, 404, b'{"error": "not found"}')
    query = parse_qs(scope.get("query_string", b"").decode())
    if path == "/hang":
        try:
            secs = _int_arg(query, "s", 0, 0, MAX_HANG_S)
        except ValueError as e:
            return await _respond(send, 400, json.dumps({"error": str(e)}).encode())
        # Blocking the event loop on purpose, as a handler that calls
        # something synchronous does.
        time.sleep(secs)
    size = DEFAULT_LARGE
    if "size" in query:
        try:
            size = int(query["size"][0])
        except ValueError:
            return await _respond(send, 400, b'{"error": "size must be a whole number of bytes"}')
        if not 0 <= size <= MAX_LARGE:
            return await _respond(send, 400, b'{"error": "size out of range"}')
    request_id = dict(scope["headers"]).get(b"x-lab-id", b"").decode()
    await send({"type": "http.response.start", "status": 200, "headers": [
        (b"content-type", b"application/octet-stream"),
        (b"content-length", str(size).encode()),
    ]})
    gone = asyncio.Event()

    async def watch():
        while (await receive())["type"] != "http.disconnect":
            pass
        gone.set()

    watcher = asyncio.ensure_future(watch())
    full, rest = divmod(size, len(BLOCK))
    clock, sent, cut = writelog.Clock(), 0, True
    try:
        for _ in range(full):
            if gone.is_set():
                break
            await send({"type": "http.response.body", "body": BLOCK, "more_body": True})
            sent += len(BLOCK)
        else:
            if rest and not gone.is_set():
                await send({"type": "http.response.body", "body": BLOCK[:rest], "more_body": True})
                sent += rest
            # Whole when no disconnect came by the last byte's send;
            # the empty end comes after, since Hypercorn tells its app of
            # the disconnect as the response's end is sent.
            cut = gone.is_set()
            if not cut:
                await send({"type": "http.response.body", "body": b"", "more_body": False})
    finally:
        watcher.cancel()
        writelog.record(request_id, clock, sent, size, sent == size and not cut, "asgi")
