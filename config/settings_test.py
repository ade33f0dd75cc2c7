"""Test settings: real PostgreSQL and Redis (see tests/services_check.py), fast hashing."""

import os
import uuid

os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/rootcause")
os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/15")
# Read by config.settings when it builds LOGGING.
os.environ.setdefault("LOG_LEVEL", "WARNING")

from config.settings import *  # noqa: F403
from config.settings import DATABASES

# Each run its own test database, so that two runs on one machine never share one.
DATABASES["default"]["TEST"] = {
    "NAME": os.environ.get("TEST_DATABASE_NAME") or f"test_rootcause_{uuid.uuid4().hex[:12]}"
}

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
# In-process tests run tasks eagerly; the end-to-end tests start a real worker against Redis.
CELERY_TASK_ALWAYS_EAGER = True
