"""The shop's API as the test sees it: where things are, and how a shopper gets its token.

Every simulated shopper signs its own short-lived JWT (HS256) with the test's signing key, as the shop's login
service would; the key comes from a Kubernetes Secret, never from the values or the code: SHOP_SIGNING_KEY in the
environment (`locust.extraEnv` with `valueFrom.secretKeyRef`), or the file SHOP_SIGNING_KEY_FILE names
(`locust.secretMounts`).
"""
import os
import time

import jwt  # PyJWT, from requirements.txt

from loadtest_lib import setting

TOKEN_LIFETIME_S = 15 * 60
# The paths default to the built-in backend's payloads, so the example runs as it is on the local stack and in the
# chart: the catalog page is the 16 KB file, a product the 1 KB one, the basket the empty one. On your application,
# set LOADTEST_CATALOG_PATH, LOADTEST_PRODUCT_PATH and LOADTEST_BASKET_PATH.
CATALOG_PATH = setting("catalog_path", "/16kb")
PRODUCT_PATH = setting("product_path", "/1kb")
BASKET_PATH = setting("basket_path", "/0kb")


def signing_key() -> str:
    """The test's signing key, from SHOP_SIGNING_KEY or the file SHOP_SIGNING_KEY_FILE; a clear stop without it."""
    path = os.environ.get("SHOP_SIGNING_KEY_FILE")
    if path:
        with open(path) as f:
            return f.read().strip()
    key = os.environ.get("SHOP_SIGNING_KEY", "")
    if not key:
        raise SystemExit("SHOP_SIGNING_KEY or SHOP_SIGNING_KEY_FILE must give the signing key (from a Secret)")
    return key


def token(shopper: str, key: str) -> str:
    now = int(time.time())
    return jwt.encode({"sub": shopper, "iat": now, "exp": now + TOKEN_LIFETIME_S}, key, algorithm="HS256")
