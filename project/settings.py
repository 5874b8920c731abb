"""Settings for Switchboard, driven by environment variables (README → Configuration).

Zero setup: SQLite and a file-system Celery broker under ``var/``, generated development secrets.
Production: ``DEBUG=false`` and then ``SECRET_KEY`` and ``FIELD_ENCRYPTION_KEYS`` are required.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import dj_database_url
from celery.schedules import crontab
from django.core.exceptions import ImproperlyConfigured
from django.utils.csp import CSP

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("SWITCHBOARD_VAR_DIR", BASE_DIR / "var"))
VAR_DIR.mkdir(parents=True, exist_ok=True)

# pytest sets PYTEST_VERSION for the whole run; tests run Celery eagerly and use fast password hashing.
TESTING = "PYTEST_VERSION" in os.environ


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    if value.lower() in {"1", "true", "yes", "on"}:
        return True
    if value.lower() in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name} must be true or false, not {value!r}.")


def env_list(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


def dev_secret(filename: str, make) -> str:
    """A development-only secret kept under var/ so restarts keep sessions and encrypted data readable."""
    path = VAR_DIR / filename
    if not path.exists():
        path.write_text(make())
        path.chmod(0o600)
    return path.read_text().strip()


def _fernet_key() -> str:
    from cryptography.fernet import Fernet

    return Fernet.generate_key().decode()


DEBUG = env_bool("DEBUG", True)

if DEBUG:
    SECRET_KEY = os.environ.get("SECRET_KEY") or dev_secret("dev-secret-key", lambda: secrets.token_urlsafe(50))
    FIELD_ENCRYPTION_KEYS = env_list("FIELD_ENCRYPTION_KEYS") or [dev_secret("dev-field-key", _fernet_key)]
else:
    SECRET_KEY = os.environ.get("SECRET_KEY", "")
    if len(SECRET_KEY) < 50:
        raise ImproperlyConfigured("SECRET_KEY is required (at least 50 characters) when DEBUG is off.")
    FIELD_ENCRYPTION_KEYS = env_list("FIELD_ENCRYPTION_KEYS")
    if not FIELD_ENCRYPTION_KEYS:
        raise ImproperlyConfigured("FIELD_ENCRYPTION_KEYS is required when DEBUG is off.")

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")
SITE_URL = os.environ.get("SITE_URL", "http://127.0.0.1:8000")

INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    "guardian",
    "js_lib_htmx",
    "ninja",  # serves the API docs' Swagger UI from our static files, not a CDN
    "organizations",
    "skills",
    "workspaces",
    "mcpservers",
    "chats",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "project.errors.ApiErrorShapeMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "organizations.middleware.AuditContextMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

ROOT_URLCONF = "project.urls"
WSGI_APPLICATION = "project.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.csp",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "organizations.context_processors.navigation",
            ],
        },
    }
]

DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL") or f"sqlite:///{VAR_DIR / 'switchboard.sqlite3'}",
        conn_max_age=int(os.environ.get("DATABASE_CONN_MAX_AGE", "0")),
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # A file, not memory, so that a real Celery worker started by a test sees the test database.
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / "test-switchboard.sqlite3")}
    DATABASES["default"].setdefault("OPTIONS", {}).update({"timeout": 20, "transaction_mode": "IMMEDIATE"})

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
AUTH_USER_MODEL = "organizations.User"
AUTHENTICATION_BACKENDS = [
    "organizations.auth.UsernameOrEmailBackend",
    "guardian.backends.ObjectPermissionBackend",
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"
ANONYMOUS_USER_NAME = None  # guardian: anonymous users never hold object permissions
GUARDIAN_MONKEY_PATCH_USER = False

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
if TESTING:
    PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

# Failed sign-ins: after this many failures for one account or one address within the window, refuse.
LOGIN_FAILURE_LIMIT = int(os.environ.get("LOGIN_FAILURE_LIMIT", "5"))
LOGIN_FAILURE_WINDOW = int(os.environ.get("LOGIN_FAILURE_WINDOW", "900"))

REDIS_URL = os.environ.get("REDIS_URL", "")
if REDIS_URL:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}}
elif TESTING:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
else:
    # Shared by the web server and the Celery processes of `make run`.
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
            "LOCATION": str(VAR_DIR / "cache"),
        }
    }

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT", VAR_DIR / "staticfiles"))
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG or TESTING
        else "django.contrib.staticfiles.storage.ManifestStaticFilesStorage"
    },
}

MESSAGE_STORAGE = "django.contrib.messages.storage.session.SessionStorage"

# Security. Content-Security-Policy: no inline script anywhere, htmx styles come from our stylesheet.
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF],
    "style-src": [CSP.SELF],
    "img-src": [CSP.SELF, "data:", "https:"],
    "connect-src": [CSP.SELF],
    "frame-ancestors": [CSP.NONE],
    "form-action": [CSP.SELF],
    "base-uri": [CSP.NONE],
    "object-src": [CSP.NONE],
}
SECURE_CONTENT_TYPE_NOSNIFF = True
# Pages may open the OAuth2 popup and hear back from it; the popup's pages send unsafe-none themselves.
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin-allow-popups"
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False  # htmx reads no cookie (the token is in hx-headers), but keep the default readable
if not DEBUG:
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if env_bool("BEHIND_PROXY", True) else None
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = int(os.environ.get("SECURE_HSTS_SECONDS", "31536000"))
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", True)

# Celery: file-system broker under var/ by default, Redis or RabbitMQ through CELERY_BROKER_URL.
# The file-system transport ignores the host; naming one keeps kombu from warning on every publish.
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL") or "filesystem://localhost//"
if CELERY_BROKER_URL.startswith("filesystem://"):
    _queue_dir = VAR_DIR / "celery" / "queue"
    _processed_dir = VAR_DIR / "celery" / "processed"
    _control_dir = VAR_DIR / "celery" / "control"
    for _dir in (_queue_dir, _processed_dir, _control_dir):
        _dir.mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_queue_dir),
        "data_folder_out": str(_queue_dir),
        "processed_folder": str(_processed_dir),
        "control_folder": str(_control_dir),
        "store_processed": False,
    }
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", TESTING)
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# A publish that cannot reach the broker gives up quickly: the audit outbox sweep delivers later.
CELERY_TASK_PUBLISH_RETRY_POLICY = {"max_retries": 2, "interval_start": 0, "interval_step": 0.2, "interval_max": 0.5}
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")
CELERY_BEAT_SCHEDULE = {
    "refresh-mcp-tokens": {
        "task": "mcpservers.tasks.refresh_mcp_tokens_task",
        "schedule": crontab(minute="*"),
    },
    "mark-unreachable-workspaces": {
        "task": "workspaces.tasks.mark_unreachable_workspaces_task",
        "schedule": crontab(minute="*"),
    },
    "sweep-audit-outbox": {
        "task": "organizations.tasks.sweep_audit_outbox_task",
        "schedule": crontab(minute="*"),
    },
}

# Audit log delivery: where delivered events are also written. Empty: only the database.
# file:///absolute/path.jsonl (JSON lines) or http(s)://host/path (one POST per event, JSON).
AUDIT_SINK_URL = os.environ.get("AUDIT_SINK_URL", "")
AUDIT_SINK_TIMEOUT = float(os.environ.get("AUDIT_SINK_TIMEOUT", "10"))
# How long (seconds) one delivery attempt may hold an event before another attempt may take it over.
AUDIT_DELIVERY_LEASE = int(os.environ.get("AUDIT_DELIVERY_LEASE", str(int(AUDIT_SINK_TIMEOUT) + 50)))
# Undelivered events older than this (seconds) are picked up by the sweep.
AUDIT_SWEEP_GRACE = int(os.environ.get("AUDIT_SWEEP_GRACE", "30"))

# Workspace agents. An agent not seen for this long is unreachable; it long-polls the server for requests.
WORKSPACE_AGENT_STALE_SECONDS = int(os.environ.get("WORKSPACE_AGENT_STALE_SECONDS", "60"))
WORKSPACE_AGENT_LONG_POLL = float(os.environ.get("WORKSPACE_AGENT_LONG_POLL", "25"))
WORKSPACE_AGENT_POLL_INTERVAL = float(os.environ.get("WORKSPACE_AGENT_POLL_INTERVAL", "0.25"))
WORKSPACE_AGENT_READ_TIMEOUT = float(os.environ.get("WORKSPACE_AGENT_READ_TIMEOUT", "10"))
# How long a chat turn waits for a starting workspace's first snapshot.
WORKSPACE_DISCOVERY_WAIT = float(os.environ.get("WORKSPACE_DISCOVERY_WAIT", "0.5" if TESTING else "15"))

# Chats: the most provider calls one turn may make.
CHAT_MAX_STEPS = int(os.environ.get("CHAT_MAX_STEPS", "8"))

# Sign-in with an OpenID Connect provider (off while OIDC_ISSUER is empty). Discovery:
# {OIDC_ISSUER}/.well-known/openid-configuration. The provider's tokens also serve `user_oidc` MCP servers.
OIDC_ISSUER = os.environ.get("OIDC_ISSUER", "").strip().rstrip("/")
OIDC_CLIENT_ID = os.environ.get("OIDC_CLIENT_ID", "")
OIDC_CLIENT_SECRET = os.environ.get("OIDC_CLIENT_SECRET", "")
OIDC_SCOPES = os.environ.get("OIDC_SCOPES", "") or "openid email profile"
OIDC_BUTTON_LABEL = os.environ.get("OIDC_BUTTON_LABEL", "") or "Sign in with your identity provider"
OIDC_CREATE_USERS = env_bool("OIDC_CREATE_USERS", False)
if OIDC_ISSUER and not OIDC_CLIENT_ID:
    raise ImproperlyConfigured("OIDC_CLIENT_ID is required when OIDC_ISSUER is set.")
TEMPLATES[0]["OPTIONS"]["context_processors"].append("organizations.oidc.sign_in_button")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}
