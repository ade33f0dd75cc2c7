"""Settings, all read from environment variables (see .env.example and the README).

With no environment at all the project runs on one machine: SQLite, Celery in eager mode and an
in-process staging store. DATABASE_URL and REDIS_URL switch to PostgreSQL and Redis.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured

from config.env import env_bool, env_int, env_list, env_networks, env_site_url, env_str
from rootcause.masking.validators import parse_public_hosts

BASE_DIR = Path(__file__).resolve().parent.parent

DEBUG = env_bool("DEBUG", default=True)

_DEV_SECRET_KEY = "dev-only-insecure-key-never-used-when-debug-is-off"  # noqa: S105
SECRET_KEY = env_str("SECRET_KEY")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is off")
    SECRET_KEY = _DEV_SECRET_KEY

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])
# The port `make run` serves on; without SITE_URL, the links point at it.
PORT = env_int("PORT", 8000, minimum=1)
# The service's public address: every link in an e-mail, an alert or an install command is built on
# it (plumbing.links.absolute_url), never on a request's Host header. SITE_ROOT, its former name,
# is still read when SITE_URL is unset.
SITE_URL = env_site_url(PORT)

# Where `make downloads` puts the client wheel (and `make vscode` the .vsix) that /downloads/
# serves, with the install commands every page shows.
DOWNLOADS_DIR = Path(env_str("DOWNLOADS_DIR") or BASE_DIR / "dist")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "axes",
    "accounts",
    "billing_tiers",
    "encyclopedia",
    "diagnosis",
    "alerts",
    "questions",
    "feedback",
    "workers",
]

MIDDLEWARE = [
    "plumbing.middleware.RequestLogMiddleware",
    # The Content-Security-Policy header (CONTENT_SECURITY_POLICY below), near the top so that
    # every answer carries it, the error pages of the middleware under it included.
    "plumbing.csp.CSPMiddleware",
    # PostgreSQL or Redis away: 503 problem+json with Retry-After, never an HTML 500.
    "plumbing.problems.OutageMiddleware",
    # Before anything reads a body: JSON bodies bounded, large forms a few at a time per process.
    "plumbing.bodies.BodyMemoryMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Last, as django-axes asks: it turns a locked-out sign-in into accounts.lockout's page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "config" / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "accounts.context_processors.organizations",
            ],
        },
    },
]

# --- Database -------------------------------------------------------------------------------
DATABASE_URL = env_str("DATABASE_URL", f"sqlite:///{BASE_DIR / 'db.sqlite3'}")
if DATABASE_URL.split("://", 1)[0] not in ("sqlite", "postgres", "postgresql", "pgsql"):
    raise ImproperlyConfigured(
        f"DATABASE_URL must be a sqlite:// or postgres:// URL, not {DATABASE_URL.split(':')[0]!r}"
    )
try:
    DATABASES = {"default": environ.Env.db_url_config(DATABASE_URL)}
except Exception as exc:  # django-environ raises several types for a malformed URL
    raise ImproperlyConfigured(f"DATABASE_URL is not a valid database URL: {exc}") from None
DATABASES["default"]["CONN_MAX_AGE"] = env_int("DB_CONN_MAX_AGE", 60, minimum=0)
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # Django's backend, whose health check polls the socket before it asks the server a query
    # (plumbing/postgresql/base.py).
    DATABASES["default"]["ENGINE"] = "plumbing.postgresql"
    # PostgreSQL binds the parameters itself, and a statement a connection has run
    # DB_PREPARE_THRESHOLD times (5) is prepared there, planned once and not again at every call:
    # the few statements each submission and each diagnosis make cost PostgreSQL more to plan
    # than to run (docs/benchmarks.md). 0 turns the preparing off, for a pooler that cannot keep
    # prepared statements across transactions (PgBouncer in transaction mode before 1.21).
    _prepare_threshold = env_int("DB_PREPARE_THRESHOLD", 5, minimum=0)
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        server_side_binding=True, prepare_threshold=_prepare_threshold or None
    )
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Redis and Celery -----------------------------------------------------------------------
REDIS_URL = env_str("REDIS_URL")
# Every key rootcause writes to Redis (staged logs, Celery queues and results) starts with this, so
# several deployments or test runs can share one Redis database and each clean up only its own.
REDIS_KEY_PREFIX = env_str("REDIS_KEY_PREFIX", "rootcause:")
# Unset REDIS_URL is the embedded mode: tasks run in-process and the raw log is staged in memory.
CELERY_TASK_ALWAYS_EAGER = not REDIS_URL
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_BROKER_URL = REDIS_URL or "memory://"
# kombu's Redis transport with one client per connection pool (plumbing/broker.py).
CELERY_BROKER_TRANSPORT = "plumbing.broker:Transport" if REDIS_URL else None
CELERY_RESULT_BACKEND = REDIS_URL or None
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_RESULT_EXPIRES = 3600
CELERY_RESULT_BACKEND_TRANSPORT_OPTIONS = {"global_keyprefix": REDIS_KEY_PREFIX}
# Redis redelivers a task whose worker died once this many seconds pass without an ack; longer
# than a task's time limit, so that a healthy task is not redelivered (the copy would only find
# its lease renewed and wait). A killed worker's stage is taken over sooner, by the sweeper, once
# its lease lapses (DIAGNOSIS_STAGE_LEASE_SECONDS).
CELERY_VISIBILITY_TIMEOUT = env_int("CELERY_VISIBILITY_TIMEOUT", 600, minimum=1)
CELERY_BROKER_TRANSPORT_OPTIONS = {
    # Queues, unacked sets, bindings and the control (ping) channels all live under the prefix.
    "global_keyprefix": REDIS_KEY_PREFIX,
    "visibility_timeout": CELERY_VISIBILITY_TIMEOUT,
    # Look for tasks of dead workers every few seconds (one cheap ZRANGE); kombu's default sweep
    # runs every 100 s, which would leave a killed worker's diagnosis waiting that long.
    "unacked_restore_interval": max(1, min(10, CELERY_VISIBILITY_TIMEOUT // 2)),
    "unacked_restore_throttle": 1,
    # A dead connection is noticed within this many seconds, not at the next timeout of a read.
    "health_check_interval": 25,
    "socket_connect_timeout": 3,
    "socket_keepalive": True,
}
# Redis going away and coming back is routine: the worker retries the broker for ever (the default
# stops after 100 tries, and the worker with it), at start as after a loss. Its in-flight tasks are
# not acknowledged yet (acks_late); when Redis comes back empty they are gone with their logs,
# and the staging sweeper fails and refunds those diagnoses (docs/operations.md).
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BROKER_CONNECTION_RETRY = True
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
CELERY_BROKER_CONNECTION_TIMEOUT = 5
# Publishing through Celery (a retry, an alert's delivery) gives up after a few seconds rather
# than hang; the web's pipeline messages go through plumbing/broker.py's TaskPublisher.
CELERY_TASK_PUBLISH_RETRY_POLICY = {
    "max_retries": 3,
    "interval_start": 0.2,
    "interval_step": 0.5,
    "interval_max": 2,
}
CELERY_REDIS_SOCKET_CONNECT_TIMEOUT = 3
CELERY_REDIS_SOCKET_TIMEOUT = 30
CELERY_REDIS_RETRY_ON_TIMEOUT = True
CELERY_REDIS_BACKEND_HEALTH_CHECK_INTERVAL = 30
# Each worker also consumes from its own queue, so that its health check (`manage.py
# check_worker`) proves that this worker takes tasks, not only that it answers a ping.
CELERY_WORKER_DIRECT = True

# --- Cache ----------------------------------------------------------------------------------
# Throttle counters (evaluation code attempts) must be shared by every web process: Redis in real
# mode, under this deployment's prefix; process memory in the embedded mode.
if REDIS_URL:
    CACHES = {
        "default": {
            # Django's, sharing one client per pool (plumbing/cache.py)
            "BACKEND": "plumbing.cache.SharedClientRedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": f"{REDIS_KEY_PREFIX}cache",
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# --- The pipeline ---------------------------------------------------------------------------
# Largest log accepted at intake, in bytes.
ROOTCAUSE_MAX_LOG_BYTES = env_int("ROOTCAUSE_MAX_LOG_BYTES", 100 * 1024 * 1024, minimum=1024)
# A bundle (one job's per-rank files, diagnosis/bundles.py): at most this many files, and this
# many bytes once expanded (an archive, or the files together); its upload is a log's size.
ROOTCAUSE_BUNDLE_MAX_FILES = env_int("ROOTCAUSE_BUNDLE_MAX_FILES", 20_000, minimum=1)
ROOTCAUSE_BUNDLE_MAX_BYTES = env_int("ROOTCAUSE_BUNDLE_MAX_BYTES", 128 * 1024 * 1024, minimum=1024)
# Backstop lifetime of the raw log in the staging store; it is deleted as soon as it is masked.
ROOTCAUSE_RAW_TTL_SECONDS = env_int("ROOTCAUSE_RAW_TTL_SECONDS", 3600, minimum=10)
# Until its diagnosis row commits, a raw log being staged lives this long after its last chunk, so
# a web process killed mid-upload leaves nothing behind for longer (diagnosis/staging.py).
STAGING_PENDING_TTL_SECONDS = env_int("STAGING_PENDING_TTL_SECONDS", 60, minimum=5)
# The staging sweeper deletes a staged log that no diagnosis row names once nobody has written it
# for this long (an upload in progress writes every chunk).
STAGING_ORPHAN_IDLE_SECONDS = env_int("STAGING_ORPHAN_IDLE_SECONDS", 20, minimum=1)
# How often beat runs that sweeper, which also fails diagnoses whose staged log was lost (a Redis
# restart) and refunds them: within a minute of the loss.
STAGING_SWEEP_SECONDS = env_int("STAGING_SWEEP_SECONDS", 20, minimum=1)
# Seconds a client is told to wait (Retry-After) when PostgreSQL or Redis is unavailable (503).
OUTAGE_RETRY_AFTER_SECONDS = env_int("OUTAGE_RETRY_AFTER_SECONDS", 15, minimum=1)
# A request body must have arrived within this many seconds (408 problem+json otherwise), and no
# read of it may wait longer than UPLOAD_IDLE_SECONDS for the next bytes (config/wsgi.py).
UPLOAD_TIMEOUT_SECONDS = env_int("UPLOAD_TIMEOUT_SECONDS", 300, minimum=1)
UPLOAD_IDLE_SECONDS = env_int("UPLOAD_IDLE_SECONDS", 30, minimum=1)
# Slow requests a client may have running at once (plumbing/concurrency.py), 429 problem+json
# with Retry-After past it: per API token or signed-in person, and per address (larger: people
# share addresses). Long polls (`?wait=`) and submissions each hold a thread while they last.
CONCURRENT_WAITS_PER_TOKEN = env_int("CONCURRENT_WAITS_PER_TOKEN", 4, minimum=1)
CONCURRENT_WAITS_PER_ADDRESS = env_int("CONCURRENT_WAITS_PER_ADDRESS", 8, minimum=1)
CONCURRENT_UPLOADS_PER_TOKEN = env_int("CONCURRENT_UPLOADS_PER_TOKEN", 4, minimum=1)
CONCURRENT_UPLOADS_PER_ADDRESS = env_int("CONCURRENT_UPLOADS_PER_ADDRESS", 8, minimum=1)
# Long polls one web process holds at once, whoever asks: past it a `?wait=` is answered at once
# with the diagnosis as it is, so that the other threads (GUNICORN_THREADS, 8) stay free.
WAITS_PER_PROCESS = env_int("WAITS_PER_PROCESS", 3, minimum=0)
# Bodies held in memory to be parsed (plumbing/bodies.py): a JSON body over this size is 413 (send
# a larger log raw or as a multipart file); a form this large or larger takes one of
# BUFFERED_BODIES_PER_PROCESS slots of its process while it is served (503 past them).
JSON_MAX_BODY_BYTES = env_int("JSON_MAX_BODY_BYTES", 8 * 1024 * 1024, minimum=1024)
BUFFERED_BODY_MIN_BYTES = env_int("BUFFERED_BODY_MIN_BYTES", 8 * 1024 * 1024, minimum=1024)
BUFFERED_BODIES_PER_PROCESS = env_int("BUFFERED_BODIES_PER_PROCESS", 1, minimum=1)
# Where an urlencoded body is no form but a raw log, streamed (curl's --data-binary default).
STREAMED_BODY_PATHS = ["/api/v1/diagnoses"]
# Extra masking recognizers in Presidio's YAML format (deny lists, patterns); docs/masking.md.
MASKING_RECOGNIZERS_FILE = env_str("MASKING_RECOGNIZERS_FILE")
if MASKING_RECOGNIZERS_FILE and not Path(MASKING_RECOGNIZERS_FILE).is_file():
    raise ImproperlyConfigured(f"MASKING_RECOGNIZERS_FILE={MASKING_RECOGNIZERS_FILE!r} is no file")
# Host names masking keeps (with the built-in public forges and services; docs/masking.md).
# The library reads the variable itself (rootcause/masking/validators.py): checked here.
MASKING_PUBLIC_HOSTS = env_str("MASKING_PUBLIC_HOSTS")
try:
    parse_public_hosts(MASKING_PUBLIC_HOSTS)
except ValueError as exc:
    raise ImproperlyConfigured(f"MASKING_PUBLIC_HOSTS: {exc}") from None
# An organisation's own masking rules (terms and patterns; docs/masking.md): how many, how long.
MASKING_RULES_PER_ORGANIZATION = env_int("MASKING_RULES_PER_ORGANIZATION", 200, minimum=0)
MASKING_RULE_MAX_LENGTH = env_int("MASKING_RULE_MAX_LENGTH", 200, minimum=2)
# A stage's lease: renewed by its worker's heartbeat every third of it while the stage runs, so a
# long stage keeps it; a killed worker's lapses within it, and another worker may take it over
# (diagnosis/pipeline/lease.py). Lease plus DIAGNOSIS_SWEEP_SECONDS bounds that take-over.
DIAGNOSIS_STAGE_LEASE_SECONDS = env_int("DIAGNOSIS_STAGE_LEASE_SECONDS", 30, minimum=1)
# A diagnosis still queued or in a stage this long after its last progress is re-queued.
DIAGNOSIS_STUCK_AFTER_SECONDS = env_int("DIAGNOSIS_STUCK_AFTER_SECONDS", 600, minimum=1)
# How often beat runs the sweeper that re-queues them (and diagnoses whose lease expired).
DIAGNOSIS_SWEEP_SECONDS = env_int("DIAGNOSIS_SWEEP_SECONDS", 10, minimum=1)
DIAGNOSIS_MAX_ATTEMPTS = env_int("DIAGNOSIS_MAX_ATTEMPTS", 3, minimum=1)

# --- Trust tiers, quotas and Scale evaluations (billing_tiers; docs/tiers.md) ----------------
# Diagnoses per UTC day. "scale" is the default allowance of new evaluation codes; a running
# evaluation uses its own code's.
TIER_DAILY_DIAGNOSES = {
    "anonymous": env_int("TIER_ANONYMOUS_DAILY_DIAGNOSES", 3, minimum=0),
    "free": env_int("TIER_FREE_DAILY_DIAGNOSES", 3, minimum=0),
    "verified": env_int("TIER_VERIFIED_DAILY_DIAGNOSES", 10, minimum=0),
    "workplace": env_int("TIER_WORKPLACE_DAILY_DIAGNOSES", 20, minimum=0),
    "scale": env_int("TIER_SCALE_DAILY_DIAGNOSES", 50, minimum=1),
}
# Days of diagnosis history kept per tier (visitors have none: their results live by link).
TIER_HISTORY_DAYS = {
    "free": env_int("TIER_FREE_HISTORY_DAYS", 30, minimum=1),
    "verified": env_int("TIER_VERIFIED_HISTORY_DAYS", 90, minimum=1),
    "workplace": env_int("TIER_WORKPLACE_HISTORY_DAYS", 365, minimum=1),
    "scale": env_int("TIER_SCALE_HISTORY_DAYS", 365, minimum=1),
}
# How long a visitor's result stays reachable by its link.
ANONYMOUS_RESULT_HOURS = env_int("ANONYMOUS_RESULT_HOURS", 24, minimum=1)
# Webhooks may reach private, loopback and link-local addresses: for tests and local trials only.
WEBHOOKS_ALLOW_PRIVATE_ADDRESSES = env_bool("WEBHOOKS_ALLOW_PRIVATE_ADDRESSES", default=False)
# How long a task holds an alert delivery while sending it; past it (the worker died), another copy
# of the task may send it, with the same id. Longer than the delivery task's time limit (90 s).
WEBHOOK_DELIVERY_LEASE_SECONDS = env_int("WEBHOOK_DELIVERY_LEASE_SECONDS", 120, minimum=1)
# Days the quota ledger (per-day counters and charges) is kept before the daily purge.
QUOTA_LEDGER_DAYS = env_int("QUOTA_LEDGER_DAYS", 35, minimum=2)
EVALUATION_DAYS = env_int("EVALUATION_DAYS", 14, minimum=1)
# Default redeem-by of a new code, in days from issue.
EVALUATION_CODE_VALID_DAYS = env_int("EVALUATION_CODE_VALID_DAYS", 30, minimum=1)
# Besides the active staff accounts, these addresses are told of each evaluation request.
STAFF_NOTIFICATION_EMAILS = env_list("STAFF_NOTIFICATION_EMAILS", [])
# Managers are e-mailed this many days before their evaluation ends.
EVALUATION_ENDING_NOTICE_DAYS = env_int("EVALUATION_ENDING_NOTICE_DAYS", 3, minimum=1)
# Code redemption attempts allowed per hour, per person and per client address.
EVALUATION_REDEEM_PER_HOUR_USER = env_int("EVALUATION_REDEEM_PER_HOUR_USER", 10, minimum=1)
EVALUATION_REDEEM_PER_HOUR_ADDRESS = env_int("EVALUATION_REDEEM_PER_HOUR_ADDRESS", 30, minimum=1)

# --- E-mail ---------------------------------------------------------------------------------
EMAIL_BACKEND = env_str(
    "EMAIL_BACKEND",
    "django.core.mail.backends.console.EmailBackend"
    if DEBUG
    else "django.core.mail.backends.smtp.EmailBackend",
)
EMAIL_HOST = env_str("EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("EMAIL_PORT", 25, minimum=1)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER")
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", default=False)
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "rootcause <noreply@localhost>")

# --- Auth, i18n, static ---------------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# The e-mail is the username, in any case (accounts/backends.py).
# django-axes first: it refuses a locked-out sign-in before the password is checked.
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "accounts.backends.EmailBackend"]
# Sign-in throttling (django-axes): failed sign-ins counted per account *and* address together,
# and per address alone; past the limit either is refused for the cool-off, then counting starts
# afresh. Not per account alone: a stranger's ten wrong passwords would then lock the owner out
# wherever they are; as it is, they lock out only the stranger's address (for that account, and
# for every account once it has guessed at several: password spraying). The attempts are rows in
# the database (axes's own tables), shared by every web process.
AXES_FAILURE_LIMIT = env_int("AXES_FAILURE_LIMIT", 10, minimum=1)
AXES_COOLOFF_TIME = timedelta(seconds=env_int("AXES_COOLOFF_SECONDS", 15 * 60, minimum=1))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"], "ip_address"]
# A successful sign-in clears the account's and the address's failures, and failures during a
# lockout do not extend it (axes's default restarts the cool-off on each one, so whoever keeps
# guessing at an account would keep its owner out for as long as they liked).
AXES_RESET_ON_SUCCESS = True
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
AXES_LOCKOUT_CALLABLE = "accounts.lockout.signin_locked"
AXES_CLIENT_IP_CALLABLE = "accounts.lockout.axes_client_ip"
AXES_VERBOSE = False
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/"
# How long the links in e-mails stay valid, in seconds.
EMAIL_VERIFICATION_MAX_AGE = env_int("EMAIL_VERIFICATION_MAX_AGE", 3 * 86400, minimum=60)
INVITATION_MAX_AGE = env_int("INVITATION_MAX_AGE", 7 * 86400, minimum=60)
# Who may read /metrics (diagnosis/metrics.py): a scraper sending `Authorization: Bearer
# <METRICS_TOKEN>`, or one whose address (through TRUSTED_PROXY_COUNT's proxies) is in
# METRICS_ALLOWED_NETWORKS. With neither set, this machine alone (loopback): the figures cover every
# organisation and are not for the public internet. Setting a token empties the default list.
METRICS_TOKEN = env_str("METRICS_TOKEN")
if METRICS_TOKEN and len(METRICS_TOKEN) < 16:
    raise ImproperlyConfigured("METRICS_TOKEN must be at least 16 characters long")
METRICS_ALLOWED_NETWORKS = env_networks(
    "METRICS_ALLOWED_NETWORKS", [] if METRICS_TOKEN else ["127.0.0.0/8", "::1/128"]
)
# How many reverse proxies of ours stand in front of the app and append to X-Forwarded-For; 0
# trusts no such header. Anonymous quotas count the client address this yields.
TRUSTED_PROXY_COUNT = env_int("TRUSTED_PROXY_COUNT", 0, minimum=0)
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
STATIC_URL = "/static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
# The base template's style sheet (the apps' own files are in their static/ folders).
STATICFILES_DIRS = [BASE_DIR / "config" / "static"]
# The raw log must never touch the disk, so uploads stay in memory (Django would spool large ones
# to a temporary file), once, in pieces freed as they are staged (plumbing/uploads.py). The API's
# raw-body intake streams instead and is the way for big logs.
FILE_UPLOAD_HANDLERS = ["plumbing.uploads.PiecesUploadHandler"]
FILE_UPLOAD_MAX_MEMORY_SIZE = ROOTCAUSE_MAX_LOG_BYTES + 1024 * 1024
DATA_UPLOAD_MAX_MEMORY_SIZE = ROOTCAUSE_MAX_LOG_BYTES + 1024 * 1024
# A bundle's files come as parts of one form; one more than its limit, so that the bundle's own
# check answers a clear 413 (diagnosis/bundles.py) before Django's count refuses the form.
DATA_UPLOAD_MAX_NUMBER_FILES = ROOTCAUSE_BUNDLE_MAX_FILES + 1

# --- REST API -------------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "accounts.authentication.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    # JSON bodies only (a form is 415), answering a too deeply nested document 400
    # (plumbing/parsers.py). A form has no null: `{"expires_at": null}` had no spelling in one
    # that the document could describe. Submissions take their own forms (diagnosis/api.py).
    "DEFAULT_PARSER_CLASSES": ["plumbing.parsers.JSONParser"],
    "DEFAULT_PAGINATION_CLASS": "plumbing.pagination.LimitOffsetPagination",
    "PAGE_SIZE": 50,
    "EXCEPTION_HANDLER": "plumbing.problems.problem_exception_handler",
    # DRF's negotiation, its choice per Accept header remembered (plumbing/negotiation.py).
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "plumbing.negotiation.RememberingContentNegotiation",
}
# Burst limits on submissions, on top of the daily quota (diagnosis/throttles.py): DRF rates,
# "<n>/<second|minute|hour|day>". 429 problem+json with Retry-After past them.
THROTTLE_SUBMISSIONS_PER_ADDRESS = env_str("THROTTLE_SUBMISSIONS_PER_ADDRESS", "120/minute")
# Failed API-token authentications per client address (accounts/throttles.py).
THROTTLE_FAILED_TOKENS_PER_ADDRESS = env_str("THROTTLE_FAILED_TOKENS_PER_ADDRESS", "30/minute")
THROTTLE_SUBMISSIONS_PER_ORGANIZATION = env_str(
    "THROTTLE_SUBMISSIONS_PER_ORGANIZATION", "600/minute"
)
SPECTACULAR_SETTINGS = {
    "TITLE": "rootcause API",
    "DESCRIPTION": "Diagnose failed machine-learning training runs from their logs.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    # Request bodies get components of their own, in which a required text field that may not be
    # blank says so (minLength 1): the schema and the validation agree (schemathesis checks it).
    "COMPONENT_SPLIT_REQUEST": True,
    # Redoc is served from our own static files, not a CDN.
    "REDOC_DIST": "SIDECAR",
    # Two fields named "role" with different choices: name their enums.
    "ENUM_NAME_OVERRIDES": {
        "MemberRoleEnum": "accounts.models.Membership.Role",
        "InvitationRoleEnum": "accounts.serializers.INVITABLE_ROLES",
        "MaskingRuleKindEnum": "accounts.models.MaskingRule.Kind",
        "DiagnosisKindEnum": "diagnosis.pipeline.stage.Kind",
        # two fields named `state`: an alert delivery's and a collective's in a hang's trail
        "DeliveryStateEnum": "alerts.models.WebhookDelivery.State",
        "CollectiveStateEnum": "rootcause.result.COLLECTIVE_STATES",
    },
    # Every error response is documented as problem+json (the Problem component).
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "plumbing.problems.problem_responses_hook",
        "plumbing.openapi_hooks.empty_query_values_hook",
        "plumbing.openapi_hooks.no_nul_in_text_hook",
        "diagnosis.serializers.submission_body_required_hook",
    ],
}

# --- Content-Security-Policy (django-csp) ----------------------------------------------------
# Every answer carries it. Scripts, styles, fonts and fetches come from this site alone, and no
# page has an inline script, style element, style attribute or event handler (a test in Chromium
# records violations: tests/browser/test_csp.py). The API docs page adds inline styles, which
# Redoc writes as it renders, and blob: workers (config/urls.py); it loads nothing from elsewhere.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        # data: for the small SVG icons Redoc and browsers' form controls draw
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'none'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
}

# --- Security (production) ------------------------------------------------------------------
if not DEBUG:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", default=True)
    # The health probes are called over plain HTTP from inside the deployment.
    SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$"]
    SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31536000, minimum=0)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True

# --- Logging --------------------------------------------------------------------------------
LOG_FORMAT = env_str("LOG_FORMAT", "text")
if LOG_FORMAT not in ("text", "json"):
    raise ImproperlyConfigured(f"LOG_FORMAT={LOG_FORMAT!r} must be 'text' or 'json'")
LOG_LEVEL = env_str("LOG_LEVEL", "INFO").upper()
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"request_id": {"()": "plumbing.middleware.RequestIdFilter"}},
    "formatters": {
        "text": {"format": "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"},
        "json": {
            "()": "pythonjsonlogger.json.JsonFormatter",
            "fmt": "%(asctime)s %(levelname)s %(name)s %(request_id)s %(message)s",
        },
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": LOG_FORMAT,
            "filters": ["request_id"],
        }
    },
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {
        # Our middleware writes the one line per request; runserver's own line would double it.
        "django.server": {"level": "WARNING"},
        "django.request": {"level": "ERROR"},
    },
}

os.environ.setdefault("TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS", "")
