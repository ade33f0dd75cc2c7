"""`make loadtest`: a live real-mode stack under locust (run.py) and its load (locustfile.py)."""
