"""asgiapp.py's /fast, /large and /upload written in FastAPI (on
Starlette; the framework cells of the resilience matrix): the same
bodies, sizes and write record (writelog.py), through FastAPI's routing,
request and response objects, as async endpoints.

/fast   the 12-byte JSON body, a Response.
/large  ?size=BYTES (16 MiB by default) of app.py's 64 KiB block as a
        StreamingResponse with its Content-Length. Starlette sends each
        block the generator yields and resumes it once send() returned,
        so the record runs from the first block handed out to the
        generator resumed after its last, as asgiapp.py's does. A client
        that goes away cancels the response (Starlette watches for
        http.disconnect); TimedStreamingResponse then closes the body at
        once (Starlette leaves a cancelled one to the garbage collector)
        and the record says incomplete, as it does for a body whose sends
        returned after the disconnect (Uvicorn 0.17's send() returns
        quietly once the client has gone). One narrow case is left: a
        disconnect the loop has not yet handed to Starlette's listener
        while the body's last sends return at once; the body is then
        recorded whole. The endpoint stays what a FastAPI user writes
        (no await between blocks), and the lab reads a client's own
        record for whether it got every byte.
/upload (POST) request.stream() read to its end and discarded, answered
        {"read": BYTES}; a client that goes away mid-body is recorded as
        an incomplete read.
"""

from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse, StreamingResponse
from starlette.requests import ClientDisconnect

import writelog
from app import BLOCK, DEFAULT_LARGE, FAST_BODY, MAX_LARGE

app = FastAPI()


class TimedStreamingResponse(StreamingResponse):
    """A StreamingResponse over body(self), an async generator of the
    body, that notes the client's http.disconnect (gone) and closes the
    body when the response ends, however it ends."""

    def __init__(self, body, **kwargs):
        self.gone = False
        super().__init__(body(self), **kwargs)

    async def __call__(self, scope, receive, send):
        async def watched():
            message = await receive()
            if message["type"] == "http.disconnect":
                self.gone = True
            return message

        try:
            await super().__call__(scope, watched, send)
        finally:
            await self.body_iterator.aclose()


@app.get("/fast")
async def fast():
    return Response(FAST_BODY, media_type="application/json")


@app.get("/large")
async def large(request: Request, size: int = DEFAULT_LARGE):
    if not 0 <= size <= MAX_LARGE:
        return JSONResponse({"error": "size must be a whole number of bytes from 0 to %d" % MAX_LARGE}, status_code=400)
    request_id = request.headers.get("x-lab-id", "")

    async def body(response):
        full, rest = divmod(size, len(BLOCK))
        clock, sent = writelog.Clock(), 0
        try:
            for _ in range(full):
                if response.gone:
                    return
                yield BLOCK
                # Resumed: send() has returned for the previous block.
                sent += len(BLOCK)
            if rest and not response.gone:
                yield BLOCK[:rest]
                sent += rest
        finally:
            writelog.record(request_id, clock, sent, size, sent == size and not response.gone, "asgi")

    return TimedStreamingResponse(body, media_type="application/octet-stream", headers={"Content-Length": str(size)})


@app.post("/upload")
async def upload(request: Request):
    try:
        size = int(request.headers.get("content-length") or 0)
    except ValueError:
        size = -1
    if not 0 <= size <= MAX_LARGE:
        return JSONResponse({"error": "Content-Length must be between 0 and %d" % MAX_LARGE}, status_code=400)
    clock, read = writelog.Clock(), 0
    try:
        async for chunk in request.stream():
            read += len(chunk)
    except ClientDisconnect:
        pass  # the record says how far the body came
    writelog.record(request.headers.get("x-lab-id", ""), clock, read, size, read == size, "upload")
    return Response(('{"read": %d}' % read).encode(), media_type="application/json")
