from locust import HttpUser

class Shadow(HttpUser):
    pass
