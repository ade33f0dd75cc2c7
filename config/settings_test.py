"""Test settings: real PostgreSQL and Redis (see tests/with_services.py), fast hashing.

Each run has its own test database and its own Redis namespace, so that two runs on one machine
(two clones, two terminals) never share state, and a run cleans up only what it wrote.
"""

import os
import uuid

os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/rootcause")
os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/15")
# Forced, not defaulted: a REDIS_KEY_PREFIX left in the environment may be a deployment's, and the
# run deletes every key under its prefix at the end (tests/conftest.py).
os.environ["REDIS_KEY_PREFIX"] = (
    os.environ.get("TEST_REDIS_KEY_PREFIX") or f"rootcause-test-{uuid.uuid4().hex[:12]}:"
)
# Read by config.settings when it builds LOGGING.
os.environ.setdefault("LOG_LEVEL", "WARNING")

from config.settings import *  # noqa: F403
from config.settings import DATABASES

DATABASES["default"]["TEST"] = {
    "NAME": os.environ.get("TEST_DATABASE_NAME") or f"test_rootcause_{uuid.uuid4().hex[:12]}"
}

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
# In-process tests run tasks eagerly; the end-to-end tests start a real worker against Redis.
CELERY_TASK_ALWAYS_EAGER = True
# Burst limits high enough for the suite (every test client is 127.0.0.1); their tests lower them.
THROTTLE_SUBMISSIONS_PER_ADDRESS = "100000/minute"
THROTTLE_SUBMISSIONS_PER_ORGANIZATION = "100000/minute"
THROTTLE_FAILED_TOKENS_PER_ADDRESS = "100000/minute"
