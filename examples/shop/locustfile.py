"""A shop's browsing traffic, as a user of loadtest would write it: each shopper logs in with a token signed by the
test's key (from a Secret), then browses the catalog, opens products and looks at the basket, in a 5 : 3 : 1 mix
with a short think time.

Run it on this machine, then on a cluster (docs/own-test.md):

    SHOP_SIGNING_KEY=dev-key loadtest local -f examples/shop/locustfile.py --requirements examples/shop/requirements.txt
"""
import itertools

from locust import FastHttpUser, between, task

import shop_client

# Read once, when Locust loads the file: a missing key stops the run before any user starts.
SIGNING_KEY = shop_client.signing_key()
_shopper_ids = itertools.count(1)


class Shopper(FastHttpUser):
    wait_time = between(0.05, 0.15)

    def on_start(self):
        token = shop_client.token(f"shopper-{next(_shopper_ids)}", SIGNING_KEY)
        self.auth = {"Authorization": f"Bearer {token}"}

    @task(5)
    def browse_catalog(self):
        with self.client.get(shop_client.CATALOG_PATH, name="catalog", headers=self.auth,
                             catch_response=True) as response:
            if len(response.content or b"") < 1024:
                response.failure(f"catalog page of {len(response.content or b'')} bytes")

    @task(3)
    def open_product(self):
        self.client.get(shop_client.PRODUCT_PATH, name="product", headers=self.auth)

    @task(1)
    def view_basket(self):
        self.client.get(shop_client.BASKET_PATH, name="basket", headers=self.auth)
