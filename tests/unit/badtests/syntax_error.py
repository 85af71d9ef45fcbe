from locust import HttpUser, task

class Broken(HttpUser)
    pass
