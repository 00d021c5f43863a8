"""asgiapp.py's /fast, /large and /upload written in FastAPI (on
Starlette; the framework cells of the resilience matrix): the same
bodies, sizes and write record (writelog.py), through FastAPI's routing,
request and response objects, as async endpoints.

/fast   the 12-byte JSON body, a Response.
/large  ?size=BYTES (16 MiB by default) of app.py's 64 KiB block as a
        StreamingResponse with its Content-Length. Starlette sends each
        block the generator yields and resumes it once send() returned,
        so the record runs from the first block handed out to the
        generator resumed after its last, as asgiapp.py's does; a client
        that goes away cancels the response (Starlette watches for
        http.disconnect), and the generator's end records the body as
        incomplete.
/upload (POST) request.stream() read to its end and discarded, answered
        {"read": BYTES}.
"""

from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse, StreamingResponse

import writelog
from app import BLOCK, DEFAULT_LARGE, FAST_BODY, MAX_LARGE

app = FastAPI()


@app.get("/fast")
async def fast():
    return Response(FAST_BODY, media_type="application/json")


@app.get("/large")
async def large(request: Request, size: int = DEFAULT_LARGE):
    if not 0 <= size <= MAX_LARGE:
        return JSONResponse({"error": "size must be a whole number of bytes from 0 to %d" % MAX_LARGE}, status_code=400)
    request_id = request.headers.get("x-lab-id", "")

    async def body():
        full, rest = divmod(size, len(BLOCK))
        clock, sent = writelog.Clock(), 0
        try:
            for _ in range(full):
                yield BLOCK
                # Resumed: send() has returned for the previous block.
                sent += len(BLOCK)
            if rest:
                yield BLOCK[:rest]
                sent += rest
        finally:
            writelog.record(request_id, clock, sent, size, sent == size, "asgi")

    return StreamingResponse(body(), media_type="application/octet-stream", headers={"Content-Length": str(size)})


@app.post("/upload")
async def upload(request: Request):
    try:
        size = int(request.headers.get("content-length") or 0)
    except ValueError:
        size = -1
    if not 0 <= size <= MAX_LARGE:
        return JSONResponse({"error": "Content-Length must be between 0 and %d" % MAX_LARGE}, status_code=400)
    clock, read = writelog.Clock(), 0
    async for chunk in request.stream():
        read += len(chunk)
    writelog.record(request.headers.get("x-lab-id", ""), clock, read, size, read == size, "upload")
    return Response(('{"read": %d}' % read).encode(), media_type="application/json")
