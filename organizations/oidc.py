"""Signing in with an OpenID Connect provider, and the user's OIDC tokens for ``user_oidc`` MCP servers.

Off while ``OIDC_ISSUER`` is empty. authlib's Django client does the protocol: discovery
(``{OIDC_ISSUER}/.well-known/openid-configuration``), state, nonce and PKCE S256 kept in the session, the code
exchange, and the id_token check (signature against the provider's JWKS, issuer, audience, expiry, nonce).

The verified claims pick the account: the one active account with the (not unverified) email, else the active
account named by ``preferred_username``; with ``OIDC_CREATE_USERS`` a new account (no usable password) when neither
matches. Anyone else is refused with a clear message and nothing is created. A deactivated account stays out.

The provider's tokens are stored encrypted per user (``UserOIDCToken``). ``access_token_for`` refreshes them under
the row lock shortly before expiry; when the refresh fails the tokens are deleted (the user signs in again) and the
event is audited. No token or secret ever leaves in a response, an audit event or a log record.
"""

from __future__ import annotations

import logging
import re
import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import requests
from authlib.common.errors import AuthlibBaseError
from authlib.integrations.django_client import OAuth
from django.conf import settings
from django.contrib.auth import login
from django.core.cache import cache
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET
from joserfc.errors import JoseError

from . import audit, services
from .forms import SignInForm
from .models import User, UserOIDCToken

logger = logging.getLogger(__name__)

BACKEND = "organizations.auth.UsernameOrEmailBackend"
REFRESH_MARGIN = timedelta(seconds=60)
HTTP_TIMEOUT = 10
NEXT_KEY = "oidc_next"

UNREACHABLE = "The identity provider could not be reached. Try again in a moment."
PROVIDER_REFUSED = "The identity provider did not sign you in."
INVALID_STATE = "That sign-in link has expired or was already used. Start again."
INVALID_IDENTITY = "The identity provider's answer could not be verified. Start again."
NO_ACCOUNT = "No Switchboard account matches your identity. Ask an administrator to add you."
AMBIGUOUS = "More than one Switchboard account has your email address. Ask an administrator."
DEACTIVATED = "Your Switchboard account is deactivated. Ask an administrator."

# Errors a provider exchange may raise: authlib's (state, provider error, token endpoint), the id_token checks, HTTP.
PROTOCOL_ERRORS = (AuthlibBaseError, JoseError, requests.RequestException, ValueError, KeyError, RuntimeError)

FORCED_REFRESH_INTERVAL = 60  # seconds between refreshes forced by a server's 401, per user
FAILED_REFRESH_PAUSE = 30  # seconds without refresh attempts after the provider failed one (not a refusal)

_lock = threading.Lock()
_clients: dict[tuple[str, ...], Any] = {}


def enabled() -> bool:
    return bool(settings.OIDC_ISSUER)


def _scopes() -> str:
    scopes = settings.OIDC_SCOPES.split()
    return " ".join(scopes if "openid" in scopes else ["openid", *scopes])


def _client():
    """The authlib client for the current settings (one per configuration; discovery and JWKS are cached on it)."""
    key = (settings.OIDC_ISSUER, settings.OIDC_CLIENT_ID, settings.OIDC_CLIENT_SECRET, _scopes())
    with _lock:
        client = _clients.get(key)
        if client is None:
            oauth = OAuth()
            client = oauth.register(
                name="oidc",
                client_id=settings.OIDC_CLIENT_ID,
                client_secret=settings.OIDC_CLIENT_SECRET or None,
                server_metadata_url=f"{settings.OIDC_ISSUER}/.well-known/openid-configuration",
                client_kwargs={"scope": _scopes(), "code_challenge_method": "S256", "default_timeout": HTTP_TIMEOUT},
            )
            _clients.clear()
            _clients[key] = client
        return client


def reset_client() -> None:
    """Forget the cached client (its discovery document and keys): the next use discovers again."""
    with _lock:
        _clients.clear()


def redirect_uri() -> str:
    return settings.SITE_URL.rstrip("/") + reverse("oidc-callback")


def sign_in_button(request: HttpRequest) -> dict:
    """Template context: the "Sign in with …" button, only when OIDC is configured."""
    if not enabled():
        return {}
    return {"oidc_sign_in": {"label": settings.OIDC_BUTTON_LABEL, "url": reverse("oidc-login")}}


# Views -------------------------------------------------------------------------------------------------------------


def _refuse(request: HttpRequest, message: str, status: int) -> HttpResponse:
    form = SignInForm()  # empty, with the message above it
    form.cleaned_data = {}
    form.add_error(None, message)
    response = render(request, "organizations/sign_in.html", {"form": form, "next": ""}, status=status)
    response["Cache-Control"] = "no-store"
    return response


@require_GET
def oidc_login(request: HttpRequest) -> HttpResponse:
    """Send the browser to the provider (state, nonce and PKCE verifier kept in the session)."""
    if not enabled():
        raise Http404("Not found.")
    next_url = request.GET.get("next") or ""
    if not url_has_allowed_host_and_scheme(next_url, allowed_hosts={request.get_host()}):
        next_url = ""
    if request.user.is_authenticated:
        return redirect(next_url or "home")
    try:
        response = _client().authorize_redirect(request, redirect_uri())
    except PROTOCOL_ERRORS as exc:
        logger.warning("OIDC sign-in could not start: %s", type(exc).__name__)
        return _refuse(request, UNREACHABLE, 502)
    request.session[NEXT_KEY] = next_url
    return response


@require_GET
def oidc_callback(request: HttpRequest) -> HttpResponse:
    """The provider sends the browser back here: exchange the code, verify the id_token, sign the user in."""
    if not enabled():
        raise Http404("Not found.")
    next_url = request.session.pop(NEXT_KEY, "") or ""
    if request.GET.get("error"):
        return _refuse(request, PROVIDER_REFUSED, 403)
    try:
        token = _client().authorize_access_token(request)
    except AuthlibBaseError as exc:
        if getattr(exc, "error", "") == "mismatching_state":
            return _refuse(request, INVALID_STATE, 400)
        logger.warning("OIDC sign-in failed at the provider: %s", _error_code(exc))
        return _refuse(request, INVALID_IDENTITY, 400)
    except JoseError as exc:  # the id_token: signature, issuer, audience, expiry or nonce
        logger.warning("OIDC sign-in refused: the id_token did not verify (%s)", type(exc).__name__)
        return _refuse(request, INVALID_IDENTITY, 400)
    except PROTOCOL_ERRORS as exc:
        logger.warning("OIDC sign-in failed: %s", type(exc).__name__)
        return _refuse(request, UNREACHABLE if isinstance(exc, requests.RequestException) else INVALID_IDENTITY, 502)
    claims = token.get("userinfo")
    if not claims or not token.get("access_token"):
        logger.warning("OIDC sign-in failed: the provider returned no id_token")
        return _refuse(request, INVALID_IDENTITY, 400)

    user, refusal = _account_for(claims)
    if user is None:
        services.record_sign_in(user=None, username=_claimed_name(claims), success=False)
        return _refuse(request, refusal, 403)
    with transaction.atomic():
        _store(user, token)
        services.record_sign_in(user=user, username=user.get_username(), success=True)
    login(request, user, backend=BACKEND)
    return redirect(next_url or "home")


# Accounts ----------------------------------------------------------------------------------------------------------


def _error_code(exc: Exception) -> str:
    """An OAuth error code fit for a log or an audit event (never the provider's free text)."""
    code = str(getattr(exc, "error", "") or "")
    return code if re.fullmatch(r"[a-z_]{1,40}", code) else type(exc).__name__


def _claimed_name(claims: dict) -> str:
    return str(claims.get("email") or claims.get("preferred_username") or claims.get("sub") or "")[:150]


def _one(queryset) -> User | None:
    found = list(queryset[:2])
    return found[0] if len(found) == 1 else None


def _account_for(claims: dict) -> tuple[User | None, str]:
    """The account these verified claims sign in to, or (None, why not)."""
    email = str(claims.get("email") or "").strip()
    if claims.get("email_verified") is False:
        email = ""  # an address the provider says it has not verified names nobody here
    username = str(claims.get("preferred_username") or "").strip()
    if email:
        user = _one(User.objects.filter(email__iexact=email, is_active=True))
        if user is not None:
            return user, ""
    if username:
        user = _one(User.objects.filter(username__iexact=username, is_active=True))
        if user is not None:
            return user, ""
    if email and User.objects.filter(email__iexact=email, is_active=True).exists():
        return None, AMBIGUOUS  # more than one: never guess, never add another
    lookups = ([{"email__iexact": email}] if email else []) + ([{"username__iexact": username}] if username else [])
    if any(User.objects.filter(is_active=False, **lookup).exists() for lookup in lookups):
        return None, DEACTIVATED
    if not settings.OIDC_CREATE_USERS:
        return None, NO_ACCOUNT
    return _create_user(claims, email, username), ""


def _free_username(wanted: str) -> str:
    base = re.sub(r"[^\w.@+-]", "", wanted)[:140] or "user"
    candidate, n = base, 1
    while User.objects.filter(username__iexact=candidate).exists():
        n += 1
        candidate = f"{base}-{n}"
    return candidate


def _create_user(claims: dict, email: str, username: str) -> User:
    wanted = username or email.split("@")[0] or str(claims.get("sub") or "")
    with transaction.atomic():
        user = User(username=_free_username(wanted), email=email)
        user.first_name = str(claims.get("given_name") or claims.get("name") or "")[:150]
        user.last_name = str(claims.get("family_name") or "")[:150]
        user.set_unusable_password()
        user.save()
        audit.record(
            actor=None,
            organization=None,
            action="user.create",
            resource_type="user",
            resource_id=user.pk,
            resource_name=user.get_username(),
            changes={"source": {"old": None, "new": "oidc"}},
        )
    return user


# Tokens ------------------------------------------------------------------------------------------------------------


def _expires(token: dict) -> datetime | None:
    expires_at = token.get("expires_at")
    if expires_at:
        return datetime.fromtimestamp(int(expires_at), tz=UTC)
    expires_in = token.get("expires_in")
    return timezone.now() + timedelta(seconds=int(expires_in)) if expires_in else None


def _store(user: User, token: dict) -> UserOIDCToken:
    stored, _ = UserOIDCToken.objects.update_or_create(
        user=user,
        defaults={
            "access_token": token["access_token"],
            "refresh_token": token.get("refresh_token") or "",
            "expires_at": _expires(token),
        },
    )
    return stored


def _forget(stored: UserOIDCToken, reason: str) -> None:
    user = stored.user
    stored.delete()
    audit.record(
        actor=user,
        organization=None,
        action="auth.oidc_refresh_failed",
        resource_type="session",
        resource_name=user.get_username(),
        changes={"reason": {"old": None, "new": reason}},
        outcome="denied",
    )
    logger.warning("the OIDC tokens of user %s could not be refreshed (%s); they were deleted", user.pk, reason)


def access_token_for(user: User | None, *, rejected: str | None = None) -> str | None:
    """The user's OIDC access token, refreshed first when it expires within a minute (one refresh at a time: the
    row is locked). None when the user has no token (signed in with a password) or it could not be refreshed.

    ``rejected``: the token a server just refused with 401. It is refreshed whatever its expiry says, unless another
    request already replaced it (then the new one is returned), and at most once a minute per user (a server that
    refuses every token gets None rather than a refresh per request). The stored tokens are deleted only when the
    provider refuses the refresh token itself; a provider that cannot be reached leaves them for another attempt,
    made after a pause of FAILED_REFRESH_PAUSE seconds (so requests meanwhile do not each wait for it)."""
    if user is None or not getattr(user, "pk", None):
        return None
    with transaction.atomic():
        stored = UserOIDCToken.objects.select_for_update().select_related("user").filter(user_id=user.pk).first()
        if stored is None:
            return None
        fresh_enough = stored.expires_at is None or stored.expires_at - REFRESH_MARGIN > timezone.now()
        if rejected is not None:
            if str(stored.access_token) != rejected:
                return str(stored.access_token)  # someone else refreshed it meanwhile
            if not cache.add(f"oidc-forced-refresh:{user.pk}", 1, FORCED_REFRESH_INTERVAL):
                return None  # refreshed after a refusal a moment ago: do not ask the provider again yet
        elif fresh_enough:
            return str(stored.access_token)
        if not stored.refresh_token:
            if rejected is not None and fresh_enough:
                return None  # refused, and nothing to refresh with: keep it (the sign-in may still be valid)
            _forget(stored, "no refresh token")
            return None
        if not enabled():
            _forget(stored, "OIDC is not configured")
            return None
        # Until it really expires, a token due for refresh is still good when the refresh cannot happen now.
        fallback = None if rejected or (stored.expires_at and stored.expires_at <= timezone.now()) else stored
        if cache.get(f"oidc-refresh-failed:{user.pk}"):
            # The provider failed a moment ago: do not make every request wait for it again.
            return str(fallback.access_token) if fallback else None
        try:
            fresh = _client().fetch_access_token(grant_type="refresh_token", refresh_token=str(stored.refresh_token))
        except PROTOCOL_ERRORS as exc:
            code = _error_code(exc)
            if code == "invalid_grant":
                _forget(stored, code)
            else:
                cache.set(f"oidc-refresh-failed:{user.pk}", 1, FAILED_REFRESH_PAUSE)
                logger.warning("refreshing the OIDC tokens of user %s failed (%s); kept for a retry", user.pk, code)
                return str(fallback.access_token) if fallback else None
            return None
        if not fresh.get("access_token"):
            _forget(stored, "no access token")
            return None
        stored.access_token = fresh["access_token"]
        if fresh.get("refresh_token"):
            stored.refresh_token = fresh["refresh_token"]
        stored.expires_at = _expires(fresh)
        stored.save()
        return str(stored.access_token)
