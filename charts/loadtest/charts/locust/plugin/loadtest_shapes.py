"""Step load: users rise in steps, each held long enough to read its RPS, to find where RPS stops growing (the knee).

Load it beside a scenario: `locust -f keepalive_1kb.py,loadtest_shapes.py` (the chart does with `locust.stepLoad`).
Settings: LOADTEST_STEP_USERS users added at each step (default 100), LOADTEST_STEP_TIME how long each step holds
(default 60s; 30s, 2m, 1h30m), LOADTEST_STEPS number of steps (default 10); then the run stops. A step's new users
start within its first tenth, so most of the step runs at its full count.
"""
from locust import LoadTestShape

from loadtest_lib import setting
from loadtest_shared import units


class StepLoadShape(LoadTestShape):
    step_users = int(setting("step_users", "100"))
    step_seconds = units.seconds(setting("step_time", "60s"))
    steps = int(setting("steps", "10"))

    def tick(self):
        step = int(self.get_run_time() // self.step_seconds)
        if step >= self.steps:
            return None
        return (step + 1) * self.step_users, self.step_users / max(1, self.step_seconds / 10)
