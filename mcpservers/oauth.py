"""The OAuth2 client side of MCP servers: discovery, dynamic registration, PKCE, code exchange, refresh, revocation.

No Django import here: callers (services, views, Celery tasks) pass plain values in and get plain values back.

- ``discover`` finds an MCP server's authorization server and registers Switchboard with it:
  RFC 9728 protected-resource metadata (``{origin}/.well-known/oauth-protected-resource{path}``, then the root form),
  whose ``authorization_servers[0]`` is the issuer; RFC 8414 authorization server metadata (the path-aware
  ``{origin}/.well-known/oauth-authorization-server{issuer path}``, then the root form, then OpenID discovery at
  ``{issuer}/.well-known/openid-configuration``). When the server publishes no protected-resource metadata its own
  origin is taken as the issuer. Then RFC 7591 dynamic client registration (a plain JSON POST: authlib has no client
  helper for it). Every response is capped at 1 MiB; any failure raises ``OAuthError`` with the message
  ``OAuth2 auto-discovery failed.`` and ``.step`` naming the step that failed. Nothing half-made is ever returned.
- ``new_pkce`` / ``authorization_url`` / ``exchange_code`` / ``refresh`` go through authlib's requests client
  (``OAuth2Session``): PKCE S256, public clients (empty client secret) send ``client_id`` in the body, confidential
  clients use HTTP Basic.
- ``revoke`` (RFC 7009) never raises: it revokes the refresh token first and falls back to the access token when
  the provider answers ``unsupported_token_type``; only 200 and 204 count as success.

Plain HTTP is done with ``requests``, redirects followed by hand (same origin only: scheme, host and port), a 10 s
deadline per operation and a 1 MiB response cap (the body is streamed and reading stops past the cap). Nothing a
provider sends back ever appears in an error, and no token or secret does either: ``OAuthError.message``,
``.detail`` and ``str(error)`` are safe to show and to log.
"""

from __future__ import annotations

import contextvars
import ipaddress
import json
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin, urlsplit

import requests
import urllib3
from authlib.common.security import generate_token
from authlib.integrations.base_client import OAuthError as AuthlibOAuthError
from authlib.integrations.requests_client import OAuth2Session
from authlib.oauth2.auth import ClientAuth
from authlib.oauth2.rfc7009 import prepare_revoke_token_request
from authlib.oauth2.rfc7636 import create_s256_code_challenge

__all__ = [
    "DISCOVERY_FAILED",
    "EXCHANGE_FAILED",
    "MAX_RESPONSE_BYTES",
    "REFRESH_FAILED",
    "STEP_AUTHORIZATION_SERVER",
    "STEP_PROTECTED_RESOURCE",
    "STEP_REGISTRATION",
    "OAuthConfig",
    "OAuthError",
    "TokenSet",
    "authorization_url",
    "check_revocation_url",
    "discover",
    "exchange_code",
    "new_pkce",
    "refresh",
    "revoke",
]

MAX_RESPONSE_BYTES = 1024 * 1024
TIMEOUT_SECONDS = 10.0  # one whole operation (all its redirects); read at call time, so tests may lower it
DISCOVERY_DEADLINE_SECONDS = 30.0  # all of discovery (it runs while a save waits); read at call time too
MAX_REDIRECTS = 5
CHUNK_BYTES = 64 * 1024

DISCOVERY_FAILED = "OAuth2 auto-discovery failed."
EXCHANGE_FAILED = "Failed to exchange authorization code for token."
REFRESH_FAILED = "Failed to refresh the OAuth2 token."

STEP_PROTECTED_RESOURCE = "protected-resource metadata"
STEP_AUTHORIZATION_SERVER = "authorization server metadata"
STEP_REGISTRATION = "client registration"

NO_REVOCATION_ENDPOINT = "no revocation endpoint configured"

# OAuth error codes (RFC 6749 §5.2, RFC 7009 §2.2.1, RFC 7591 §3.2.2) that may be named in an error. Any other value
# the provider puts in ``error`` is provider text and is left out.
KNOWN_ERROR_CODES = frozenset(
    {
        "invalid_request",
        "invalid_client",
        "invalid_grant",
        "unauthorized_client",
        "unsupported_grant_type",
        "invalid_scope",
        "unsupported_token_type",
        "access_denied",
        "server_error",
        "temporarily_unavailable",
        "invalid_redirect_uri",
        "invalid_client_metadata",
        "invalid_software_statement",
        "unapproved_software_statement",
    }
)

_REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
_DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True)
class OAuthConfig:
    client_id: str
    client_secret: str  # "" for a public client
    auth_url: str
    token_url: str
    revocation_url: str  # "" when none is known
    scopes: str  # space-separated


@dataclass(frozen=True)
class TokenSet:
    access_token: str
    refresh_token: str  # "" when the provider issued none
    expires_at: float | None  # Unix time; None when the provider gave no lifetime
    token_type: str
    scope: str  # the granted scope when the provider said so, else ""


class OAuthError(Exception):
    """A failed OAuth2 operation. ``message`` is safe to show: it never carries a token, a secret or anything the
    provider sent back. ``step`` names the discovery step that failed ("" outside discovery); ``detail`` is a short,
    equally safe explanation; ``invalid_grant`` is True when a refresh must be replaced by a new connection (the
    provider answered ``invalid_grant``, or there was no refresh token to use)."""

    def __init__(self, message: str, *, step: str = "", detail: str = "", invalid_grant: bool = False):
        self.message = message
        self.step = step
        self.detail = detail
        self.invalid_grant = invalid_grant
        super().__init__(message)

    def __str__(self) -> str:
        context = ": ".join(part for part in (self.step, self.detail) if part)
        return f"{self.message} ({context})" if context else self.message


# PKCE and the authorization URL ---------------------------------------------------------------------------------


def new_pkce() -> tuple[str, str]:
    """A fresh PKCE pair: ``(code_verifier, S256 code_challenge)``. The verifier is 64 characters of [A-Za-z0-9]
    (RFC 7636 allows 43–128 unreserved characters); the challenge is base64url(sha256(verifier)), no padding."""
    verifier = generate_token(64)
    return verifier, create_s256_code_challenge(verifier)


def authorization_url(
    config: OAuthConfig, *, redirect_uri: str, state: str, code_challenge: str, resource: str | None = None
) -> str:
    """The provider's authorization URL for the authorization code flow with PKCE S256. ``resource`` (RFC 8707, the
    MCP server's URL) is added when given. Existing query parameters of ``config.auth_url`` are kept."""
    with _session(config, redirect_uri=redirect_uri) as session:
        url, _ = session.create_authorization_url(
            config.auth_url,
            state=state,
            code_challenge=code_challenge,
            code_challenge_method="S256",
            scope=config.scopes or None,
            resource=resource or None,
        )
    return url


# Tokens ---------------------------------------------------------------------------------------------------------


def exchange_code(
    config: OAuthConfig, *, code: str, redirect_uri: str, code_verifier: str, resource: str | None = None
) -> TokenSet:
    """Trade an authorization code for tokens. Any failure raises ``OAuthError("Failed to exchange authorization code
    for token.")``. ``resource`` (RFC 8707) is sent when given."""
    if not code or not code_verifier:
        raise OAuthError(EXCHANGE_FAILED, detail="missing authorization code or PKCE verifier")
    try:
        with _session(config, redirect_uri=redirect_uri) as session:
            token = session.fetch_token(
                config.token_url,
                grant_type="authorization_code",
                code=code,
                redirect_uri=redirect_uri,
                code_verifier=code_verifier,
                resource=resource or None,
                **_token_request_options(),
            )
        return _token_set(token)
    except _HTTPFailure as failure:
        raise OAuthError(EXCHANGE_FAILED, detail=failure.reason) from None
    except AuthlibOAuthError as error:
        raise OAuthError(EXCHANGE_FAILED, detail=_provider_error_detail(error.error)) from None
    except requests.RequestException as error:
        raise OAuthError(EXCHANGE_FAILED, detail=_requests_failure(error)) from None
    except (ValueError, TypeError, KeyError):
        raise OAuthError(EXCHANGE_FAILED, detail="the token endpoint gave no usable token") from None


def refresh(config: OAuthConfig, *, refresh_token: str, resource: str | None = None) -> TokenSet:
    """Use a refresh token. When the provider issues no new refresh token the given one is kept in the result.
    Failure raises ``OAuthError("Failed to refresh the OAuth2 token.")`` with ``invalid_grant`` set when the provider
    answered ``invalid_grant`` (or there is no refresh token): the user has to connect again."""
    if not refresh_token:
        raise OAuthError(REFRESH_FAILED, detail="no refresh token", invalid_grant=True)
    try:
        with _session(config) as session:
            token = session.refresh_token(
                config.token_url, refresh_token=refresh_token, resource=resource or None, **_token_request_options()
            )
        return _token_set(token)
    except _HTTPFailure as failure:
        raise OAuthError(REFRESH_FAILED, detail=failure.reason) from None
    except AuthlibOAuthError as error:
        raise OAuthError(
            REFRESH_FAILED, detail=_provider_error_detail(error.error), invalid_grant=error.error == "invalid_grant"
        ) from None
    except requests.RequestException as error:
        raise OAuthError(REFRESH_FAILED, detail=_requests_failure(error)) from None
    except (ValueError, TypeError, KeyError):
        raise OAuthError(REFRESH_FAILED, detail="the token endpoint gave no usable token") from None


def _session(config: OAuthConfig, *, redirect_uri: str | None = None) -> OAuth2Session:
    # token_endpoint_auth_method follows the secret: "client_secret_basic" with one, "none" (client_id in the body)
    # without. No scope on the session: the authorization URL gets it explicitly, a refresh keeps the granted scope.
    session = OAuth2Session(
        client_id=config.client_id,
        client_secret=config.client_secret or None,
        token_endpoint_auth_method="client_secret_basic" if config.client_secret else "none",
        redirect_uri=redirect_uri,
        code_challenge_method="S256",
    )
    session.register_compliance_hook("access_token_response", _cap_token_response)
    session.register_compliance_hook("refresh_token_response", _cap_token_response)
    session.headers["Accept-Encoding"] = "identity"  # the cap and the deadline count bytes as they arrive
    return session


def _token_request_options() -> dict[str, Any]:
    # Token requests never follow a redirect (it would carry the code, the verifier or the client's credentials
    # elsewhere); a redirect answer is simply not a token. The body is streamed so the cap hook can stop reading.
    return {"allow_redirects": False, "stream": True, "timeout": TIMEOUT_SECONDS}


def _cap_token_response(response: requests.Response) -> requests.Response:
    """Compliance hook: read the token response under the size cap and the deadline, before authlib parses it."""
    body = _read_capped(response, time.monotonic() + TIMEOUT_SECONDS)
    response._content = body  # what ``response.json()`` reads from here on
    response._content_consumed = True
    response.close()
    return response


def _token_set(token: dict) -> TokenSet:
    access_token = token.get("access_token")
    if not isinstance(access_token, str) or not access_token:
        raise ValueError("no access token")
    refresh_token = token.get("refresh_token")
    expires_at = token.get("expires_at")
    token_type = token.get("token_type")
    scope = token.get("scope")
    return TokenSet(
        access_token=access_token,
        refresh_token=refresh_token if isinstance(refresh_token, str) else "",
        expires_at=float(expires_at) if _is_number(expires_at) else None,
        token_type=token_type if isinstance(token_type, str) and token_type else "Bearer",
        scope=scope if isinstance(scope, str) else "",
    )


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _provider_error_detail(code: object) -> str:
    if isinstance(code, str) and code in KNOWN_ERROR_CODES:
        return f"the provider answered {code}"
    return "the provider refused the request"


# Revocation -----------------------------------------------------------------------------------------------------


def check_revocation_url(url: str) -> str | None:
    """None when ``url`` is acceptable as a revocation endpoint (https, or http to a loopback address), else a short
    reason."""
    try:
        parts = urlsplit((url or "").strip())
        parts.port  # noqa: B018 - raises ValueError on a malformed port
    except ValueError:
        return "revocation endpoint must be an http:// or https:// URL"
    if parts.scheme not in _DEFAULT_PORTS or not parts.hostname:
        return "revocation endpoint must be an http:// or https:// URL"
    if parts.username or parts.password:
        return "revocation endpoint must not carry a user name or password"
    if parts.scheme != "https" and not _is_loopback(parts.hostname):
        return "revocation endpoint must use HTTPS (plain HTTP only to a loopback address)"
    return None


def revoke(config: OAuthConfig, *, access_token: str, refresh_token: str) -> tuple[bool, str]:
    """Ask the provider to revoke the user's grant (RFC 7009). Returns ``(token_revoked, token_revocation_error)``,
    the error "" on success. Never raises.

    The refresh token goes first (revoking it ends the grant); when the provider answers 400 ``unsupported_token_type``
    the access token is revoked instead. Without a refresh token the access token is revoked directly. Only 200 and
    204 count as success."""
    try:
        if not config.revocation_url:
            return False, NO_REVOCATION_ENDPOINT
        problem = check_revocation_url(config.revocation_url)
        if problem:
            return False, problem
        if refresh_token:
            status, code = _revoke_one(config, refresh_token, "refresh_token")
            if status in (200, 204):
                return True, ""
            if not (status == 400 and code == "unsupported_token_type" and access_token):
                return False, _revocation_failure(status, code)
        if not access_token:
            return False, "no token to revoke"
        status, code = _revoke_one(config, access_token, "access_token")
        if status in (200, 204):
            return True, ""
        return False, _revocation_failure(status, code)
    except _HTTPFailure as failure:
        return False, f"revocation request failed: {failure.reason}"
    except Exception:  # best effort by contract: a disconnect never fails because of revocation
        return False, "revocation request failed"


def _revoke_one(config: OAuthConfig, token: str, hint: str) -> tuple[int, str]:
    """POST one revocation request; the HTTP status and, for an error answer, the OAuth error code ("" if none)."""
    body, headers = prepare_revoke_token_request(token, hint, "", {"Accept": "application/json"})
    method = "client_secret_basic" if config.client_secret else "none"
    auth = ClientAuth(config.client_id, config.client_secret, method)
    _, headers, body = auth.prepare("POST", config.revocation_url, headers, body)
    status, content = _http("POST", config.revocation_url, data=body.encode(), headers=headers)
    code = ""
    if status >= 400:
        try:
            answer = json.loads(content)
        except ValueError:
            answer = None
        if isinstance(answer, dict) and isinstance(answer.get("error"), str):
            code = answer["error"]
    return status, code


def _revocation_failure(status: int, code: str) -> str:
    if code in KNOWN_ERROR_CODES:
        return f"revocation endpoint answered HTTP {status} ({code})"
    return f"revocation endpoint answered HTTP {status}"


# Discovery ------------------------------------------------------------------------------------------------------


_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar("oauth_discovery_deadline", default=None)


def discover(resource_url: str, *, redirect_uri: str, client_name: str, scopes: str = "") -> OAuthConfig:
    """Find the MCP server's authorization server and register a client with it; see the module docstring for the
    order. ``scopes`` "" takes the protected resource's ``scopes_supported`` when it lists any. Raises
    ``OAuthError("OAuth2 auto-discovery failed.", step=…)``; never returns a partial configuration. All of it, every
    request included, ends within ``DISCOVERY_DEADLINE_SECONDS``."""
    deadline = time.monotonic() + DISCOVERY_DEADLINE_SECONDS
    reset = _deadline.set(deadline)
    try:
        return _discover(resource_url, redirect_uri=redirect_uri, client_name=client_name, scopes=scopes)
    except OAuthError as error:
        if time.monotonic() >= deadline:
            error.detail = f"gave up after {DISCOVERY_DEADLINE_SECONDS:g} s"
        raise
    finally:
        _deadline.reset(reset)


def _discover(resource_url: str, *, redirect_uri: str, client_name: str, scopes: str) -> OAuthConfig:
    resource = _parse_http_url(resource_url)
    if resource is None:
        raise OAuthError(DISCOVERY_FAILED, step=STEP_PROTECTED_RESOURCE, detail="the server URL is not a valid URL")
    allow_http = resource.scheme == "http"  # an https server's authorization server must be https too (or loopback)
    origin = f"{resource.scheme}://{resource.netloc}"

    # RFC 9728: protected-resource metadata.
    resource_metadata = None
    for url in _well_known_urls(resource_url, "oauth-protected-resource"):
        document = _try_json(url)
        if document is not None:
            resource_metadata = document
            break
    issuer = None
    if resource_metadata is not None:
        servers = resource_metadata.get("authorization_servers")
        if isinstance(servers, list) and servers:
            issuer = servers[0]
            if not isinstance(issuer, str) or _endpoint_problem(issuer, allow_http):
                raise OAuthError(
                    DISCOVERY_FAILED,
                    step=STEP_PROTECTED_RESOURCE,
                    detail="the first authorization server is not a usable URL",
                )
        if not scopes:
            supported = resource_metadata.get("scopes_supported")
            if isinstance(supported, list) and all(isinstance(scope, str) and scope for scope in supported):
                scopes = " ".join(supported)

    # RFC 8414 (and OpenID discovery): authorization server metadata.
    if issuer is not None:
        candidates = _authorization_server_metadata_urls(issuer)
        failure_step = STEP_AUTHORIZATION_SERVER
        failure_detail = "no usable metadata found for the authorization server"
    else:
        # No protected-resource metadata (or none naming an authorization server): the server's own origin is the
        # issuer, as MCP servers did before RFC 9728.
        candidates = _authorization_server_metadata_urls(origin)
        if resource_metadata is None:
            failure_step = STEP_PROTECTED_RESOURCE
            failure_detail = "not found, and the server's origin publishes no authorization server metadata"
        else:
            failure_step = STEP_AUTHORIZATION_SERVER
            failure_detail = "no authorization server named, and none found at the server's origin"
    metadata = None
    for url in candidates:
        document = _try_json(url)
        if document is not None and _usable_server_metadata(document, allow_http):
            metadata = document
            break
    if metadata is None:
        raise OAuthError(DISCOVERY_FAILED, step=failure_step, detail=failure_detail)
    methods = metadata.get("code_challenge_methods_supported")
    if isinstance(methods, list) and "S256" not in methods:
        raise OAuthError(
            DISCOVERY_FAILED, step=STEP_AUTHORIZATION_SERVER, detail="the authorization server does not offer PKCE S256"
        )

    # RFC 7591: dynamic client registration.
    client_id, client_secret = _register(
        metadata, allow_http, redirect_uri=redirect_uri, client_name=client_name, scopes=scopes
    )

    revocation_url = metadata.get("revocation_endpoint")
    if not isinstance(revocation_url, str) or check_revocation_url(revocation_url):
        revocation_url = ""
    return OAuthConfig(
        client_id=client_id,
        client_secret=client_secret,
        auth_url=metadata["authorization_endpoint"],
        token_url=metadata["token_endpoint"],
        revocation_url=revocation_url,
        scopes=scopes,
    )


def _register(metadata: dict, allow_http: bool, *, redirect_uri: str, client_name: str, scopes: str) -> tuple[str, str]:
    endpoint = metadata.get("registration_endpoint")
    if not isinstance(endpoint, str) or not endpoint:
        raise OAuthError(
            DISCOVERY_FAILED,
            step=STEP_REGISTRATION,
            detail="the authorization server does not offer dynamic client registration",
        )
    if _endpoint_problem(endpoint, allow_http):
        raise OAuthError(DISCOVERY_FAILED, step=STEP_REGISTRATION, detail="the registration endpoint is not usable")
    # A confidential client (HTTP Basic) unless the server only takes public clients. RFC 8414: an absent list
    # means client_secret_basic.
    supported = metadata.get("token_endpoint_auth_methods_supported")
    if not isinstance(supported, list) or "client_secret_basic" in supported:
        auth_method = "client_secret_basic"
    elif "none" in supported:
        auth_method = "none"
    else:
        raise OAuthError(
            DISCOVERY_FAILED,
            step=STEP_REGISTRATION,
            detail="the authorization server supports neither client_secret_basic nor public clients",
        )
    request: dict[str, Any] = {
        "client_name": client_name,
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": auth_method,
    }
    if scopes:
        request["scope"] = scopes
    try:
        status, content = _http(
            "POST",
            endpoint,
            data=json.dumps(request).encode(),
            headers={"Content-Type": "application/json", "Accept": "application/json"},
        )
    except _HTTPFailure as failure:
        raise OAuthError(DISCOVERY_FAILED, step=STEP_REGISTRATION, detail=failure.reason) from None
    if status not in (200, 201):
        raise OAuthError(
            DISCOVERY_FAILED, step=STEP_REGISTRATION, detail=f"the registration endpoint answered HTTP {status}"
        )
    try:
        answer = json.loads(content)
    except ValueError:
        answer = None
    if not isinstance(answer, dict) or not isinstance(answer.get("client_id"), str) or not answer["client_id"]:
        raise OAuthError(DISCOVERY_FAILED, step=STEP_REGISTRATION, detail="the registration answer has no client_id")
    secret = answer.get("client_secret")
    if not isinstance(secret, str) or answer.get("token_endpoint_auth_method") == "none":
        secret = ""
    return answer["client_id"], secret


def _well_known_urls(url: str, name: str) -> list[str]:
    """``{origin}/.well-known/{name}{path}`` (path-aware, a trailing slash dropped), then the root form
    ``{origin}/.well-known/{name}``."""
    parts = urlsplit(url)
    origin = f"{parts.scheme}://{parts.netloc}"
    path = parts.path.rstrip("/")
    if parts.query:
        path = f"{path}?{parts.query}"
    urls = [f"{origin}/.well-known/{name}{path}", f"{origin}/.well-known/{name}"]
    return list(dict.fromkeys(urls))


def _authorization_server_metadata_urls(issuer: str) -> list[str]:
    """RFC 8414 path-aware, RFC 8414 root, then OpenID discovery appended to the issuer."""
    urls = _well_known_urls(issuer, "oauth-authorization-server")
    parts = urlsplit(issuer)
    urls.append(f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}/.well-known/openid-configuration")
    return list(dict.fromkeys(urls))


def _usable_server_metadata(document: dict, allow_http: bool) -> bool:
    return all(
        isinstance(document.get(name), str) and not _endpoint_problem(document[name], allow_http)
        for name in ("authorization_endpoint", "token_endpoint")
    )


def _try_json(url: str) -> dict | None:
    """The JSON object at ``url`` (GET, status 200), or None on any failure."""
    try:
        status, content = _http("GET", url, headers={"Accept": "application/json"})
    except _HTTPFailure:
        return None
    if status != 200:
        return None
    try:
        document = json.loads(content)
    except ValueError:
        return None
    return document if isinstance(document, dict) else None


def _endpoint_problem(url: str, allow_http: bool) -> str | None:
    parts = _parse_http_url(url)
    if parts is None:
        return "not an http:// or https:// URL"
    if parts.username or parts.password:
        return "carries a user name or password"
    if parts.fragment:
        return "carries a fragment"
    if parts.scheme != "https" and not allow_http and not _is_loopback(parts.hostname or ""):
        return "must use HTTPS"
    return None


# HTTP -----------------------------------------------------------------------------------------------------------


class _HTTPFailure(Exception):
    """A request that got no usable answer; ``reason`` is safe to show (no URL, no provider text)."""

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(reason)


def _http(method: str, url: str, *, data: bytes | None = None, headers: dict[str, str]) -> tuple[int, bytes]:
    """One request with same-origin redirects followed by hand (a POST only on 307/308, re-sent as it was), a
    deadline for the whole exchange and the response body capped. Returns ``(status, body)``."""
    deadline = time.monotonic() + TIMEOUT_SECONDS
    overall = _deadline.get()
    if overall is not None:
        deadline = min(deadline, overall)
    headers = {**headers, "Accept-Encoding": "identity"}
    with requests.Session() as session:
        for _ in range(MAX_REDIRECTS + 1):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise _HTTPFailure("timed out")
            try:
                response = session.request(
                    method, url, data=data, headers=headers, allow_redirects=False, stream=True, timeout=remaining
                )
            except requests.RequestException as error:
                raise _HTTPFailure(_requests_failure(error)) from None
            with response:
                location = response.headers.get("Location")
                if response.status_code in _REDIRECT_STATUSES and location:
                    target = urljoin(url, location)
                    if _origin(target) != _origin(url):
                        raise _HTTPFailure("redirected to another origin")
                    if method != "GET" and response.status_code not in (307, 308):
                        raise _HTTPFailure("redirected without keeping the request")
                    url = target
                    continue
                return response.status_code, _read_capped(response, deadline)
    raise _HTTPFailure("too many redirects")


def _read_capped(response: requests.Response, deadline: float) -> bytes:
    declared = response.headers.get("Content-Length", "")
    if declared.isdigit() and int(declared) > MAX_RESPONSE_BYTES:
        raise _HTTPFailure("response larger than 1 MiB")
    if response.headers.get("Content-Encoding", "identity").strip().lower() not in ("", "identity"):
        # Asked for identity: a compressed body could expand past the cap, or stall inside the decoder.
        raise _HTTPFailure("the response was compressed")
    chunks: list[bytes] = []
    total = 0
    try:
        # read1 answers with whatever has arrived, so a body trickled a byte at a time cannot outlast the deadline
        # (iter_content would wait for a whole chunk); each read may wait only for what is left of the deadline.
        while True:
            _wait_at_most(response, deadline - time.monotonic())
            chunk = response.raw.read1(CHUNK_BYTES, decode_content=False)
            if not chunk:
                break
            total += len(chunk)
            if total > MAX_RESPONSE_BYTES:
                raise _HTTPFailure("response larger than 1 MiB")
            if time.monotonic() > deadline:
                raise _HTTPFailure("timed out")
            chunks.append(chunk)
    except requests.RequestException as error:
        raise _HTTPFailure(_requests_failure(error)) from None
    except (urllib3.exceptions.HTTPError, OSError) as error:
        raise _HTTPFailure(_urllib3_failure(error)) from None
    return b"".join(chunks)


def _wait_at_most(response: requests.Response, seconds: float) -> None:
    if seconds <= 0:
        raise _HTTPFailure("timed out")
    connection = getattr(response.raw, "connection", None)
    sock = getattr(connection, "sock", None)
    if sock is not None:
        sock.settimeout(seconds)


def _urllib3_failure(error: Exception) -> str:
    if isinstance(error, urllib3.exceptions.ReadTimeoutError | TimeoutError):
        return "timed out"
    if isinstance(error, urllib3.exceptions.DecodeError):
        return "the response could not be decoded"
    return "the connection failed"


def _requests_failure(error: requests.RequestException) -> str:
    if isinstance(error, requests.Timeout):
        return "timed out"
    if isinstance(error, requests.ConnectionError):
        return "could not connect"
    if isinstance(error, requests.HTTPError) and error.response is not None:
        return f"the endpoint answered HTTP {error.response.status_code}"
    return "the request failed"


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port or _DEFAULT_PORTS.get(scheme)
    except ValueError:
        port = None
    return scheme, (parts.hostname or "").lower(), port


def _parse_http_url(url: str):
    try:
        parts = urlsplit((url or "").strip())
        parts.port  # noqa: B018 - raises ValueError on a malformed port
    except ValueError:
        return None
    if parts.scheme not in _DEFAULT_PORTS or not parts.hostname:
        return None
    return parts


def _is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
