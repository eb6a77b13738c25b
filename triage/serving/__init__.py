"""The request-level serving simulation, laid out as Vidur lays out a simulator: the request stream
(requests.py), one engine instance's event loop (engine.py), its scheduling policies, one module each behind a
registry (policies/), the run's work budget (budget.py), what a run leaves (outcome.py), a rate's statistics
(metrics.py), the largest rate at the SLO (search.py), and a deployment's two sides through a traffic
(deployment.py). Step and iteration times come from the cost model alone (model/iteration.py).
"""
