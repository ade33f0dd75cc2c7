"""rootcause, the library: masking, evidence and rank analysis, fingerprint matching, remediation,
the catalogue files, the typed result and the `rootcause` command. Plain Python: nothing here
imports Django, Celery or DRF (import-linter checks it in `make lint`)."""
