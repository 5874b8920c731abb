"""Per-user OAuth2 for MCP servers: connect (state and PKCE bound to the user and the server), the callback, tokens
stored encrypted per (server, user), refresh before use and ahead of expiry (one refresh in flight per token: the
token row is locked, so rotating refresh tokens are never burned by concurrent refreshes), and disconnect with
best-effort revocation. No token, secret or provider answer ever leaves in a response, a log or an error.
"""

from __future__ import annotations

import logging
import random
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from organizations import audit
from organizations.models import User

from . import oauth
from .models import AuthType, MCPServer, MCPUserToken, OAuthPending

logger = logging.getLogger(__name__)

PENDING_SECONDS = 600
REFRESH_MARGIN = timedelta(seconds=60)
AHEAD_OF_EXPIRY = timedelta(minutes=5)
FAILED_REFRESH_PAUSE = 30  # seconds without refresh attempts (beat aside) after the provider failed one
FORCED_REFRESH_INTERVAL = 60  # seconds between refreshes forced by a server's 401, per connection


@dataclass
class CallbackError(Exception):
    status: int
    message: str

    def __str__(self) -> str:
        return self.message


def redirect_uri(server_id: int) -> str:
    return settings.SITE_URL.rstrip("/") + reverse("api:mcp_oauth2_callback", kwargs={"server_id": server_id})


def config_for(server: MCPServer) -> oauth.OAuthConfig:
    return oauth.OAuthConfig(
        client_id=server.oauth2_client_id,
        client_secret=str(server.oauth2_client_secret or ""),
        auth_url=server.oauth2_auth_url,
        token_url=server.oauth2_token_url,
        revocation_url=server.oauth2_revocation_url,
        scopes=server.oauth2_scopes,
    )


def _record(actor, server: MCPServer, action: str, changes: dict | None = None, outcome: str = "success") -> None:
    audit.record(
        actor=actor,
        organization=server.organization,
        action=f"mcp_server.{action}",
        resource_type="mcp_server",
        resource_id=server.pk,
        resource_name=server.display_name,
        changes=changes or {},
        outcome=outcome,
    )


def connect_start(*, user: User, server: MCPServer) -> str:
    """Begin connecting ``user`` to ``server``: returns the provider's authorization URL."""
    verifier, challenge = oauth.new_pkce()
    state = secrets.token_urlsafe(32)
    uri = redirect_uri(server.pk)
    with transaction.atomic():
        OAuthPending.objects.filter(created_at__lt=timezone.now() - timedelta(seconds=PENDING_SECONDS)).delete()
        OAuthPending.objects.create(state=state, server=server, user=user, code_verifier=verifier, redirect_uri=uri)
    return oauth.authorization_url(
        config_for(server), redirect_uri=uri, state=state, code_challenge=challenge, resource=server.url
    )


def _expires(tokens: oauth.TokenSet):
    if not tokens.expires_at:
        return None
    return datetime.fromtimestamp(tokens.expires_at, tz=UTC)


def connect_finish(*, user: User, server: MCPServer, params: dict) -> MCPUserToken:
    """The callback. The state is checked first (bound to this user and this server, fresh, single use), so nobody
    without a valid state can write anything, not even an audit event. Raises CallbackError with the documented
    status and message."""
    state = params.get("state") or ""
    with transaction.atomic():
        pending = (
            OAuthPending.objects.select_for_update().filter(state=state, user=user, server=server).first()
            if state
            else None
        )
        if pending is not None:
            pending.delete()  # single use, whatever happens next
    fresh = pending is not None and pending.created_at >= timezone.now() - timedelta(seconds=PENDING_SECONDS)
    if not fresh:
        raise CallbackError(400, "Invalid or missing OAuth2 state parameter.")
    if params.get("error"):
        _record(user, server, "oauth2_connect", {"error": {"old": None, "new": "provider error"}}, "denied")
        raise CallbackError(400, "OAuth2 provider returned an error.")
    code = params.get("code") or ""
    if not code:
        raise CallbackError(400, "Missing authorization code.")
    try:
        tokens = oauth.exchange_code(
            config_for(server),
            code=code,
            redirect_uri=pending.redirect_uri,
            code_verifier=str(pending.code_verifier),
            resource=server.url,
        )
    except oauth.OAuthError:
        raise CallbackError(502, "Failed to exchange authorization code for token.") from None
    with transaction.atomic():
        token, _ = MCPUserToken.objects.update_or_create(
            server=server,
            user=user,
            defaults={
                "access_token": tokens.access_token,
                "refresh_token": tokens.refresh_token or "",
                "token_type": tokens.token_type or "Bearer",
                "scope": tokens.scope or "",
                "expires_at": _expires(tokens),
                "needs_reconnect": False,
                "refreshed_at": timezone.now(),
            },
        )
        _record(user, server, "oauth2_connect")
    return token


def connection_state(user: User, server: MCPServer) -> str:
    """ "connected", "expired" (will refresh on use), "needs_reconnect" or "not_connected"."""
    return state_of(MCPUserToken.objects.filter(server=server, user=user).first())


def state_of(token: MCPUserToken | None) -> str:
    """``connection_state`` of a token already fetched (for lists: one query for all of them)."""
    if token is None:
        return "not_connected"
    if token.needs_reconnect:
        return "needs_reconnect"
    if token.expires_at and token.expires_at <= timezone.now():
        return "expired" if token.refresh_token else "needs_reconnect"
    return "connected"


def _refresh_locked(token: MCPUserToken, server: MCPServer, *, force: bool = False) -> MCPUserToken | None:
    """Refresh while holding the token row lock (call inside transaction.atomic with select_for_update).
    Another caller that waited for the lock finds the token fresh and does not refresh again."""
    # A token without an expiry is used until the server refuses it (then a 401 forces a refresh).
    due = token.expires_at is not None and token.expires_at - REFRESH_MARGIN <= timezone.now()
    if not force and not due:
        return token
    if not token.refresh_token:
        token.needs_reconnect = True
        token.save(update_fields=["needs_reconnect"])
        return None
    try:
        tokens = oauth.refresh(config_for(server), refresh_token=str(token.refresh_token), resource=server.url)
    except oauth.OAuthError as exc:
        if getattr(exc, "invalid_grant", False):
            token.needs_reconnect = True
            token.save(update_fields=["needs_reconnect"])
        _record(token.user, server, "oauth2_refresh", {"result": {"old": None, "new": "failed"}}, "denied")
        logger.warning("refreshing the OAuth2 token of user %s for MCP server %s failed", token.user_id, server.slug)
        return None
    token.access_token = tokens.access_token
    if tokens.refresh_token:
        token.refresh_token = tokens.refresh_token
    token.expires_at = _expires(tokens)
    token.refreshed_at = timezone.now()
    token.needs_reconnect = False
    token.save()
    return token


def access_token_for(*, user: User, server: MCPServer, rejected: str | None = None) -> str | None:
    """The user's access token for the server, refreshed first when expired or nearly so. None when the user is not
    connected or must reconnect.

    ``rejected``: the token the server just refused with 401. It is refreshed whatever its expiry says, unless another
    request already replaced it (then the new one is returned), and at most once a minute per connection (a server
    that refuses every token gets None rather than a refresh per request). When the provider fails a refresh (other
    than refusing it), requests do not ask it again for FAILED_REFRESH_PAUSE seconds, and a token that has not
    expired yet is still used meanwhile."""
    if server.auth_type != AuthType.OAUTH2:
        return None
    with transaction.atomic():
        token = MCPUserToken.objects.select_for_update().filter(server=server, user=user).first()
        if token is None or token.needs_reconnect:
            return None
        force = False
        if rejected is not None:
            if str(token.access_token) != rejected:
                return str(token.access_token)  # someone else refreshed it meanwhile
            if not cache.add(f"mcp-oauth2-forced-refresh:{token.pk}", 1, FORCED_REFRESH_INTERVAL):
                return None
            force = True
        now = timezone.now()
        due = force or (token.expires_at is not None and token.expires_at - REFRESH_MARGIN <= now)
        # Until it really expires, a token due for refresh is still good when the refresh cannot happen now.
        usable = None if force or (token.expires_at and token.expires_at <= now) else str(token.access_token)
        paused = f"mcp-oauth2-refresh-failed:{token.pk}"
        if due and cache.get(paused):
            return usable  # the provider failed a moment ago: do not make every request wait for it again
        refreshed = _refresh_locked(token, server, force=force)
        if refreshed is not None:
            return str(refreshed.access_token)
        if token.needs_reconnect:
            return None
        cache.set(paused, 1, FAILED_REFRESH_PAUSE)
        return usable


def refresh_expiring() -> int:
    """Beat: refresh tokens that expire soon, spread out with jitter so they do not all hit the provider at once."""
    horizon = timezone.now() + AHEAD_OF_EXPIRY
    ids = list(
        MCPUserToken.objects.filter(needs_reconnect=False, expires_at__lte=horizon)
        .exclude(refresh_token="")
        .values_list("pk", flat=True)
    )
    random.shuffle(ids)
    refreshed = 0
    for token_id in ids:
        with transaction.atomic():
            token = (
                MCPUserToken.objects.select_for_update().select_related("server", "user").filter(pk=token_id).first()
            )
            if token is None or token.needs_reconnect:
                continue
            # Each token is refreshed at a random point of its last five minutes (the beat runs every minute).
            spread = random.uniform(REFRESH_MARGIN.total_seconds(), AHEAD_OF_EXPIRY.total_seconds())  # noqa: S311
            if token.expires_at and token.expires_at > timezone.now() + timedelta(seconds=spread):
                continue
            refreshed += _refresh_locked(token, token.server, force=True) is not None
    return refreshed


def disconnect(*, user: User, server_id: int) -> dict:
    """Delete the user's stored token (always) and revoke it at the provider (best effort). Open to users who lost
    access to the server or left the organization: it only needs their session."""
    token = (
        MCPUserToken.objects.select_related("server", "server__organization")
        .filter(server_id=server_id, user=user)
        .first()
    )
    if token is None:
        return {"token_revoked": False, "token_revocation_error": "no stored token"}
    server = token.server
    access, refresh_value = str(token.access_token), str(token.refresh_token or "")
    with transaction.atomic():
        token.delete()
        _record(user, server, "oauth2_disconnect")
    revoked, error = oauth.revoke(config_for(server), access_token=access, refresh_token=refresh_value)
    return {"token_revoked": revoked, "token_revocation_error": error}
