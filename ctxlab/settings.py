"""Django settings for ctxlab, configured by environment variables only.

Defaults give the embedded, no-services setup (SQLite, in-process Celery worker on a
``memory://`` broker, in-memory channel layer). Distributed mode is the same code with
``DATABASE_URL``, ``CELERY_BROKER_URL`` and ``CHANNEL_LAYER_URL`` set (see README).
Variables: ``DJANGO_*`` for Django's own knobs, ``CTXLAB_*`` for ours.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from ctxlab import paths
from ctxlab.envconfig import (
    channel_layers_from_url,
    database_from_url,
    env_bool,
    env_int,
    env_list,
    sqlite_database,
)
from ctxlab.serving.embedded_pool import usable_cores

BASE_DIR = Path(__file__).resolve().parent.parent

# Writable state (SQLite files, tiktoken cache, media) lives in one git-ignored directory:
# var/ in a checkout, under the user's home when installed from the wheel (ctxlab/paths.py).
DATA_DIR = paths.data_dir()
# templates/ and static/: the checkout root, or their copy inside an installed wheel.
SITE_DIR = paths.site_dir()
DATA_DIR.mkdir(parents=True, exist_ok=True)

# ---------------------------------------------------------------------------------------------
# Core / security
# ---------------------------------------------------------------------------------------------

DEBUG = env_bool("DJANGO_DEBUG", True)

_DEV_SECRET_KEY = "django-insecure-ctxlab-dev-key-do-not-use-in-production"
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", _DEV_SECRET_KEY)
if not DEBUG and SECRET_KEY == _DEV_SECRET_KEY:
    raise ImproperlyConfigured(
        "DJANGO_SECRET_KEY is not set and DJANGO_DEBUG is off: refusing to start with the "
        "public development key. Set DJANGO_SECRET_KEY to a long random string."
    )

ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])

SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_HTTPONLY = True
# Django's database sessions and model backend, their per-view lookups compiled once.
SESSION_ENGINE = "ctxlab.session_rows"
AUTHENTICATION_BACKENDS = ["ctxlab.session_rows.RowBackend"]
SESSION_COOKIE_SAMESITE = "Lax"
# htmx reads the token from the page (body hx-headers), never from the cookie.
CSRF_COOKIE_HTTPONLY = True
CSRF_COOKIE_SAMESITE = "Lax"
# Behind TLS set CTXLAB_HTTPS=1: secure cookies, HSTS and redirect to https.
_HTTPS = env_bool("CTXLAB_HTTPS", False)
SESSION_COOKIE_SECURE = _HTTPS
CSRF_COOKIE_SECURE = _HTTPS
SECURE_SSL_REDIRECT = _HTTPS
SECURE_HSTS_SECONDS = 31_536_000 if _HTTPS else 0

# Content-Security-Policy (ctxlab.web.middleware.SecurityHeadersMiddleware): no origin but our
# own, anywhere, and no inline or eval'd script: charts are JSON data blocks drawn by
# static/js/plots.js (ctxlab/web/plots.py), htmx runs with allowEval false (templates/base.html)
# and no template uses hx-on, trigger filters, js: values or on*= attributes (tests check
# every page type). Measured in Chromium: plotly.min.js draws under script-src 'self', but it
# injects <style> elements and style attributes, hence style-src 'unsafe-inline'.
CTXLAB_CSP = os.environ.get(
    "CTXLAB_CSP",
    "; ".join(
        [
            "default-src 'self'",
            "script-src 'self'",
            "style-src 'self' 'unsafe-inline'",
            "img-src 'self' data: blob:",
            "font-src 'self' data:",
            "connect-src 'self'",
            "object-src 'none'",
            "base-uri 'self'",
            "form-action 'self'",
            "frame-ancestors 'none'",
        ]
    ),
)

# ---------------------------------------------------------------------------------------------
# Applications
# ---------------------------------------------------------------------------------------------

INSTALLED_APPS = [
    "daphne",  # first: its runserver serves ASGI (websockets) in development
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "channels",
    "django_htmx",
    "template_partials",
    "django_celery_results",
    "ctxlab",  # management commands (serve, ensure_local_user), ownership helpers
    "sessions_app",
    "replay_app",
    "judge_app",  # probes and after-effects
    "suites_app",  # many transcripts × many configurations
    "prompts_app",  # the prompt editor: versions of a compaction prompt, replayed, exported
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Before WhiteNoise: static files get the same headers as pages.
    "ctxlab.web.middleware.SecurityHeadersMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",  # static files before any auth check
    "ctxlab.web.storage_errors.StorageErrorMiddleware",  # disk full / read-only: 503, no traceback
    "ctxlab.serving.abandon.AbandonedRequestMiddleware",  # the client went away: stop, quietly
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.auth.middleware.LoginRequiredMiddleware",  # every view, unless exempted
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "ctxlab.web.middleware.VaryOnHtmxMiddleware",  # fragments and pages share URLs
]

ROOT_URLCONF = "ctxlab.urls"
WSGI_APPLICATION = "ctxlab.wsgi.application"
ASGI_APPLICATION = "ctxlab.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [SITE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
            # num / when: one number and time format on every page (ctxlab/web/display.py)
            "builtins": ["ctxlab.templatetags.display"],
        },
    },
]

# ---------------------------------------------------------------------------------------------
# Database: DATABASE_URL=postgres://... for PostgreSQL, else SQLite in DATA_DIR
# ---------------------------------------------------------------------------------------------

_DATABASE_URL = os.environ.get("DATABASE_URL", "").strip()
if _DATABASE_URL:
    DATABASES = {"default": database_from_url(_DATABASE_URL)}
else:
    # Per-process test DB name: several pytest runs may share one checkout.
    DATABASES = {
        "default": sqlite_database(
            DATA_DIR / "db.sqlite3", test_path=DATA_DIR / f"test_db_{os.getpid()}.sqlite3"
        )
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# ---------------------------------------------------------------------------------------------
# Authentication: every page needs a login (LoginRequiredMiddleware)
# ---------------------------------------------------------------------------------------------

LOGIN_URL = "login"
# Failed logins before that account / that client address must wait for the window to pass
# (ctxlab/login_throttle.py).
CTXLAB_LOGIN_FAILURES_PER_ACCOUNT = env_int("CTXLAB_LOGIN_FAILURES_PER_ACCOUNT", 5)
CTXLAB_LOGIN_FAILURES_PER_ADDRESS = env_int("CTXLAB_LOGIN_FAILURES_PER_ADDRESS", 20)
CTXLAB_LOGIN_WINDOW_SECONDS = env_int("CTXLAB_LOGIN_WINDOW_SECONDS", 900)
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

# ---------------------------------------------------------------------------------------------
# Static files: served by WhiteNoise straight from the finders (no collectstatic needed)
# ---------------------------------------------------------------------------------------------

STATIC_URL = "static/"
STATIC_ROOT = (DATA_DIR if paths.is_installed() else BASE_DIR) / "staticfiles"
STATICFILES_DIRS = [SITE_DIR / "static"]
STATICFILES_FINDERS = [
    "django.contrib.staticfiles.finders.FileSystemFinder",
    "django.contrib.staticfiles.finders.AppDirectoriesFinder",
    "ctxlab.web.staticfinders.PlotlyFinder",  # only plotly/plotly.min.js from the plotly package
]
WHITENOISE_USE_FINDERS = True
# STATIC_ROOT exists only after an optional collectstatic; without it WhiteNoise warned
# "No directory at ..." once per serving process at every start.
warnings.filterwarnings("ignore", message=r"No directory at: .*staticfiles", category=UserWarning)
WHITENOISE_AUTOREFRESH = DEBUG
MEDIA_ROOT = DATA_DIR / "media"

# ---------------------------------------------------------------------------------------------
# Uploads and limits
# ---------------------------------------------------------------------------------------------

CTXLAB_MAX_UPLOAD_BYTES = env_int("CTXLAB_MAX_UPLOAD_BYTES", 200 * 1024 * 1024)
# Largest request body `manage.py serve` reads (one file per upload request, as the upload
# page posts them, plus the form around it); refused with 413 as soon as it is crossed.
# Bodies over 64 KiB are read only for a logged-in session (ctxlab/serving/bounded_server.py).
CTXLAB_MAX_REQUEST_BYTES = env_int(
    "CTXLAB_MAX_REQUEST_BYTES", CTXLAB_MAX_UPLOAD_BYTES + 1024 * 1024
)
# Memory (MB) the web process may keep of finished runs' derived values (fate logs,
# curves, charts) between requests (replay_app/memo.py weighs each one).
CTXLAB_MEMO_MB = env_int("CTXLAB_MEMO_MB", 256)
# Processes `manage.py serve` answers GET/HEAD requests from (ctxlab.serving.page_pool); 0 = the
# serving process answers everything itself.
CTXLAB_PAGE_PROCESSES = env_int("CTXLAB_PAGE_PROCESSES", usable_cores())
# Disk (MB) for finished runs' derived page data shared by the served processes and kept
# across restarts (replay_app/memo.py, under DATA_DIR/memo); 0 = memory only.
CTXLAB_MEMO_DISK_MB = env_int("CTXLAB_MEMO_DISK_MB", 1024)
# Uploads larger than this are streamed to a temp file instead of memory: an unnamed file
# in ctxlab's own temp directory (sessions_app/uploads.py), so a killed server or a client
# that went away leaves none behind; `manage.py serve` sweeps stray ones at start.
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024
CTXLAB_UPLOAD_TEMP_DIR = Path(os.environ.get("CTXLAB_UPLOAD_TEMP_DIR") or DATA_DIR / "tmp")
FILE_UPLOAD_HANDLERS = [
    "django.core.files.uploadhandler.MemoryFileUploadHandler",
    "sessions_app.uploads.UploadTempFileHandler",
]
DATA_UPLOAD_MAX_MEMORY_SIZE = CTXLAB_MAX_UPLOAD_BYTES
DATA_UPLOAD_MAX_NUMBER_FIELDS = 10_000

# ---------------------------------------------------------------------------------------------
# Celery: memory:// = embedded in-process worker (started by `manage.py serve`);
# redis://... = separate `celery -A ctxlab.celery worker` processes.
# ---------------------------------------------------------------------------------------------

CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "memory://")
if CELERY_BROKER_URL.startswith("memory://"):
    # The in-memory transport polls; its 1 s default would add a second to every task.
    CELERY_BROKER_TRANSPORT_OPTIONS = {"polling_interval": 0.01}
elif CELERY_BROKER_URL.startswith(("redis://", "rediss://")):
    # A task is acknowledged only when it ends (acks late): if its worker dies, Redis hands
    # it to another worker after this many seconds (its default is an hour). A run still
    # executing elsewhere is not run twice: the executor claims it only from "queued".
    # kombu sweeps for such tasks every 10 s but scans only every 10th sweep by default
    # (unacked_restore_throttle): up to 100 s more. Scan at every sweep.
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "visibility_timeout": env_int("CTXLAB_BROKER_VISIBILITY_TIMEOUT", 300),
        "unacked_restore_throttle": 1,
    }
CELERY_RESULT_BACKEND = "django-db"
CELERY_RESULT_EXTENDED = True
CELERY_TASK_STORE_EAGER_RESULT = True  # bound into task classes at import; must be a setting
CELERY_TASK_ALWAYS_EAGER = env_bool("CTXLAB_CELERY_EAGER", False)
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True  # a killed worker's task goes back to the queue
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
# Runs at once in the embedded worker (its threads), and the child processes they execute
# in (ctxlab.serving.embedded_pool): threads share one interpreter lock. 0 = runs stay in threads.
CTXLAB_EMBEDDED_WORKER_CONCURRENCY = env_int("CTXLAB_WORKER_CONCURRENCY", max(2, usable_cores()))
CTXLAB_EMBEDDED_WORKER_PROCESSES = env_int("CTXLAB_EMBEDDED_WORKER_PROCESSES", usable_cores())
# A running run silent this long is failed / a live run's heartbeat interval (README).
CTXLAB_RUN_STALE_SECONDS = env_int("CTXLAB_RUN_STALE_SECONDS", 45)
CTXLAB_RUN_HEARTBEAT_SECONDS = env_int("CTXLAB_RUN_HEARTBEAT_SECONDS", 15)

# ---------------------------------------------------------------------------------------------
# Claude summaries and costs. The API key is read from ANTHROPIC_API_KEY by the SDK
# itself (ANTHROPIC_BASE_URL honoured) and never stored or shown.
# ---------------------------------------------------------------------------------------------

CTXLAB_SUMMARY_MODELS = env_list(
    "CTXLAB_SUMMARY_MODELS", ["claude-haiku-5-5", "claude-sonnet-5-5", "claude-opus-5-5"]
)
CTXLAB_DEFAULT_SUMMARY_MODEL = os.environ.get("CTXLAB_DEFAULT_SUMMARY_MODEL", "claude-haiku-5-5")
CTXLAB_RUN_BUDGET_USD = os.environ.get("CTXLAB_RUN_BUDGET_USD", "5.00")  # per run, USD
CTXLAB_COUNT_TOKENS_PER_SECOND = float(os.environ.get("CTXLAB_COUNT_TOKENS_PER_SECOND", "5"))

# ---------------------------------------------------------------------------------------------
# Channels
# ---------------------------------------------------------------------------------------------

CHANNEL_LAYERS = channel_layers_from_url(
    os.environ.get("CHANNEL_LAYER_URL") or os.environ.get("REDIS_URL")
)

# ---------------------------------------------------------------------------------------------
# Tokenizer: tiktoken must never reach for the network (the cl100k file ships in a package)
# ---------------------------------------------------------------------------------------------

os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(DATA_DIR / "tiktoken"))

# ---------------------------------------------------------------------------------------------
# i18n / logging
# ---------------------------------------------------------------------------------------------

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": os.environ.get("CTXLAB_LOG_LEVEL", "INFO")},
    "loggers": {
        "celery": {"level": "WARNING"},
        "daphne": {"level": "WARNING"},
        "django.channels.server": {"level": "WARNING"},  # daphne prints its own access log
        # memory:// has no host; kombu warns about it on every connection.
        "kombu.connection": {"level": "ERROR"},
    },
}
