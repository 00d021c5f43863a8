"""app.py's /fast, /large and /upload written in Django (the framework
cells of the resilience matrix), a project in one module: the same
bodies, sizes and write record (writelog.py), through Django's URL
resolver, middleware (the default project's that need no database:
SecurityMiddleware, CommonMiddleware, XFrameOptionsMiddleware), request
and response objects.

/fast   the 12-byte JSON body, an HttpResponse (CommonMiddleware sets its
        Content-Length).
/large  app.py's timed body (?size=BYTES, 16 MiB by default) as a
        StreamingHttpResponse with its Content-Length: Django closes the
        body with the response, so the write record is app.py's own.
/upload (POST) the request read to its end in 64 KiB reads and discarded,
        answered {"read": BYTES}.

application is the WSGI callable.
"""

import json

from django.conf import settings

settings.configure(
    # Not a secret: the app signs nothing.
    SECRET_KEY="wsgilab-framework-cells",
    DEBUG=False,
    # Directly, the lab's requests carry Host: 127.0.0.1:8000; behind
    # NGINX, 127.0.0.1 (Django compares the host without its port).
    ALLOWED_HOSTS=["127.0.0.1", "localhost"],
    ROOT_URLCONF=__name__,
    INSTALLED_APPS=[],
    MIDDLEWARE=[
        "django.middleware.security.SecurityMiddleware",
        "django.middleware.common.CommonMiddleware",
        "django.middleware.clickjacking.XFrameOptionsMiddleware",
    ],
    DATABASES={},
    USE_TZ=True,
)

from django.core.wsgi import get_wsgi_application  # noqa: E402 (after settings)
from django.http import HttpResponse, JsonResponse, StreamingHttpResponse  # noqa: E402
from django.urls import path  # noqa: E402
from django.views.decorators.http import require_GET, require_POST  # noqa: E402

import writelog  # noqa: E402
from app import DEFAULT_LARGE, FAST_BODY, MAX_LARGE, TimedBody, read_to_end  # noqa: E402


@require_GET
def fast(request):
    return HttpResponse(FAST_BODY, content_type="application/json")


@require_GET
def large(request):
    try:
        size = int(request.GET.get("size", DEFAULT_LARGE))
    except ValueError:
        size = -1
    if not 0 <= size <= MAX_LARGE:
        return JsonResponse({"error": "size must be a whole number of bytes from 0 to %d" % MAX_LARGE}, status=400)
    response = StreamingHttpResponse(TimedBody(size, request.headers.get("X-Lab-Id", "")), content_type="application/octet-stream")
    response["Content-Length"] = str(size)
    return response


@require_POST
def upload(request):
    try:
        size = int(request.headers.get("Content-Length") or 0)
    except ValueError:
        size = -1
    if not 0 <= size <= MAX_LARGE:
        return JsonResponse({"error": "Content-Length must be between 0 and %d" % MAX_LARGE}, status=400)
    clock = writelog.Clock()
    read = read_to_end(request.read, size)
    writelog.record(request.headers.get("X-Lab-Id", ""), clock, read, size, read == size, "upload")
    return HttpResponse(json.dumps({"read": read}), content_type="application/json")


urlpatterns = [path("fast", fast), path("large", large), path("upload", upload)]

application = get_wsgi_application()
