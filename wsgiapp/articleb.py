"""Article B's Django app in one module.

/account/ulogin/<n>/  AES-encrypts the query parameters wlanuserip,
                      wlanacname, ssid and wlanparameter (AES-256-CBC with
                      PKCS7 padding and a random IV, python3-cryptography)
                      and returns the ciphertext as base64 JSON. With
                      LAB_BLOCK_MS set it first sleeps that long in
                      time.sleep, standing for a slow third-party call.
/fast                 a 12-byte JSON body, for readiness checks.

Under gevent (Gunicorn -k gevent, uWSGI --gevent-monkey-patch) time.sleep
is patched and yields; under sync workers and uWSGI's ugreen it blocks.
"""

import base64
import json
import os
import time

from django.conf import settings

settings.configure(
    DEBUG=False,
    ALLOWED_HOSTS=["*"],
    ROOT_URLCONF=__name__,
    SECRET_KEY="wsgilab-not-a-secret",
    MIDDLEWARE=[],
    INSTALLED_APPS=[],
    USE_TZ=True,
)

from cryptography.hazmat.primitives import padding  # noqa: E402
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes  # noqa: E402
from django.core.wsgi import get_wsgi_application  # noqa: E402
from django.http import HttpResponse, JsonResponse  # noqa: E402
from django.urls import path  # noqa: E402

BLOCK_S = int(os.environ.get("LAB_BLOCK_MS", "0")) / 1000.0
FIELDS = ("wlanuserip", "wlanacname", "ssid", "wlanparameter")
KEY = bytes(range(32))


def encrypt(plaintext):
    iv = os.urandom(16)
    padder = padding.PKCS7(128).padder()
    padded = padder.update(plaintext) + padder.finalize()
    encryptor = Cipher(algorithms.AES(KEY), modes.CBC(iv)).encryptor()
    return iv + encryptor.update(padded) + encryptor.finalize()


def ulogin(request, n):
    if BLOCK_S:
        time.sleep(BLOCK_S)
    params = {k: request.GET.get(k, "") for k in FIELDS}
    ciphertext = encrypt(json.dumps(params, sort_keys=True).encode())
    return JsonResponse({"n": n, "data": base64.b64encode(ciphertext).decode()})


def fast(request):
    return HttpResponse(b'{"ok": true}', content_type="application/json")


urlpatterns = [
    path("account/ulogin/<int:n>/", ulogin),
    path("fast", fast),
]

application = get_wsgi_application()
