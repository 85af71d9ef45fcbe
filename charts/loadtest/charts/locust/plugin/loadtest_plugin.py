"""The project's plugins for a locustfile of your own: load this file beside it, `locust -f yours.py,loadtest_plugin.py`
(the chart's `locust.test` and `loadtest local -f` do), and your file needs to import nothing of ours.

It registers what every built-in scenario gets through loadtest_lib: the web UI's authentication, the Prometheus
metrics of the run and each worker's CPU-ceiling reports (loadtest_metrics), on which the saturation rules, the
verdict and the dashboards rest.

What your file may import, with these names kept stable:
  leanhttp.LeanHttpUser       a user that spends its CPU on requests (several times FastHttpUser's RPS per core)
  loadtest_lib.RouteSpread    spreads the users over the chart target's routes (LOADTEST_ROUTES)
  loadtest_lib.setting        a setting from LOADTEST_<NAME>, with a default
  loadtest_shapes.StepLoadShape  the step load (the chart loads it with `locust.stepLoad`)
"""
import loadtest_lib  # noqa: F401  (importing it registers the plugins)
