"""Test settings: real PostgreSQL and Redis (see tests/services_check.py), fast hashing."""

import os

os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/rootcause")
os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/15")

from config.settings import *  # noqa: F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
# In-process tests run tasks eagerly; the end-to-end tests start a real worker against Redis.
CELERY_TASK_ALWAYS_EAGER = True
LOG_LEVEL = "WARNING"
