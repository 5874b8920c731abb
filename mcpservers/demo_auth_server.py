"""A small OAuth 2 / OpenID Connect authorization server built with authlib's server core, for development and tests.

``make run`` starts it (``python -m mcpservers.demo_auth_server``) together with an OAuth-protected copy of the demo
MCP tools, and ``manage.py seed_demo`` registers that MCP server in ``acme`` as "Demo tools (OAuth)", so a fresh
checkout can try the whole per-user connect flow: Connect opens this server's consent page in a popup, Allow sends the
browser back to Switchboard's callback with a code, and the demo tools then answer only with the member's token. The
test suite runs the same server on ephemeral ports (``tests/peers/oauth_server.py``) and turns its switches to play
every provider behaviour Switchboard has to survive. Everything is in memory: restarting it forgets every token, so
connections made before show "needs reconnect" (which is also how a real provider withdrawing a grant looks).

Not for production: no user accounts or passwords (the consent page asks for a name), and no persistence.

authlib's framework-agnostic ``AuthorizationServer`` (grants, PKCE, client authentication, RFC 7009 revocation,
RFC 7591 registration, OIDC id_token, userinfo) runs behind a small Starlette adapter served by uvicorn (no Flask).
Every option is an attribute that may change while the server runs (``server.revocation_mode = "accepted"``).

Endpoints (``P`` is the configured ``issuer_path``, "" by default; ``issuer = base_url + P``):

- ``GET /.well-known/oauth-authorization-server`` (RFC 8414, switch ``oauth_metadata``) and, when ``P`` is set, the
  path-aware ``GET /.well-known/oauth-authorization-server{P}`` (switch ``oauth_metadata_path_aware``);
- ``GET {P}/.well-known/openid-configuration`` and ``GET /.well-known/openid-configuration{P}`` (switch
  ``openid_configuration``); all three documents are the same, see ``metadata()``;
- ``GET {P}/authorize``: with ``consent`` (the demo), an HTML page naming the client and the scopes, with a name
  field, Allow and Deny, which ``POST {P}/authorize`` decides. Without ``consent`` (tests) there is no UI: it approves
  at once for ``logged_in_user`` (a 302 back to the redirect URI with ``code`` and ``state``), or answers
  ``error=access_denied`` when ``deny=True`` (``deny="temporarily_unavailable"``: that error), or ``login_required``
  when ``logged_in_user`` is None. An unknown client or a redirect URI the client did not register gets a 400 JSON
  error (no redirect), as RFC 6749 requires. PKCE ``S256`` is required (``require_pkce``); ``plain`` is refused;
- ``POST {P}/token``: ``authorization_code`` and ``refresh_token`` grants; client authentication
  ``client_secret_basic``, ``client_secret_post`` or ``none`` (public clients). Refresh tokens ROTATE
  (``rotate_refresh_tokens``); presenting an already-rotated refresh token is reuse: the whole family (every token
  descended from that authorization code) is revoked and the answer is 400 ``invalid_grant``. Replaying an
  authorization code does the same to the tokens issued from it. Access tokens live ``access_token_lifetime``
  seconds (None: forever, no ``expires_in``);
- ``POST {P}/revoke`` (RFC 7009, switch ``revocation``): answers per ``revocation_mode`` (see ``REVOCATION_MODES``);
  ``POST {P}/revoke/redirected`` is where the redirect modes point (it always revokes and answers 200);
- ``POST {P}/register`` (RFC 7591, switch ``registration``): plain JSON, no initial access token; answers 201 with a
  ``client_id`` (and ``client_secret`` unless ``token_endpoint_auth_method`` is ``none``);
- ``GET {P}/jwks``: the RSA public key that signs id_tokens (RS256, with a ``kid``);
- ``GET|POST {P}/userinfo``: the signed-in user's claims for a Bearer access token whose scope has ``openid``.

With the ``openid`` scope the token response carries an ``id_token`` (``iss`` = issuer, ``aud`` = client_id, ``sub``,
``preferred_username``, ``email``, ``email_verified``, ``name``, ``nonce`` when one was sent, ``at_hash``).

For resource servers: ``server.validate_bearer(token_or_header, scopes=None)`` → the active ``Token`` or None;
``protected_resource_metadata(resource, [issuer])`` builds an RFC 9728 document; ``BearerGate(app, server)`` wraps an
ASGI app so it serves RFC 9728 metadata and answers 401 + ``WWW-Authenticate: Bearer resource_metadata="…"`` to
requests without a valid token.

Run the demo on its own (what ``make run`` does)::

    .venv/bin/python -m mcpservers.demo_auth_server --host 127.0.0.1 --port 8766

It serves the authorization server at ``/`` (issuer ``http://127.0.0.1:8766``) and the demo tools at ``/mcp``, with a
pre-registered public client ``switchboard-demo`` (PKCE, no secret) that accepts redirect URIs on loopback hosts only.
No Django import here.
"""

from __future__ import annotations

import argparse
import base64
import contextvars
import json
import secrets
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from html import escape
from typing import Any
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit

import anyio
from authlib.common.security import generate_token
from authlib.common.urls import add_params_to_uri
from authlib.oauth2 import AuthorizationServer, OAuth2Error, OAuth2Request, ResourceProtector
from authlib.oauth2.rfc6749 import (
    ClientMixin,
    InvalidRequestError,
    JsonPayload,
    JsonRequest,
    OAuth2Payload,
    TokenMixin,
    grants,
    list_to_scope,
    scope_to_list,
)
from authlib.oauth2.rfc6750 import BearerTokenGenerator, BearerTokenValidator
from authlib.oauth2.rfc7009 import RevocationEndpoint
from authlib.oauth2.rfc7591 import ClientRegistrationEndpoint
from authlib.oauth2.rfc7636 import CodeChallenge
from authlib.oidc.core import UserInfo, UserInfoEndpoint
from authlib.oidc.core.grants import OpenIDCode
from authlib.oidc.core.models import AuthorizationCodeMixin
from joserfc.jwk import KeySet, RSAKey
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

CLIENT_AUTH_METHODS = ["client_secret_basic", "client_secret_post", "none"]

#: ``revocation_mode`` values: what ``POST /revoke`` answers.
REVOCATION_MODES = {
    "revoke": "200 {} and the token is revoked (a refresh token takes its whole family with it)",
    "no_content": "204, empty body, and the token is revoked",
    "accepted": "202 {} and nothing is revoked (202 is not success for Switchboard)",
    "unsupported_refresh": "400 unsupported_token_type for a refresh token (by value or hint); access tokens: 200",
    "redirect_cross_origin": "307 to http://localhost:<port>/…/revoke/redirected (another origin), nothing revoked",
    "redirect_same_origin": "307 to <issuer>/revoke/redirected (same origin), which then revokes and answers 200",
    "error": "503 with a body holding REVOCATION_BODY_SENTINEL, nothing revoked",
}
REVOCATION_BODY_SENTINEL = "REVOCATION-BODY-SENTINEL-must-never-leak"
TOKEN_BODY_SENTINEL = "TOKEN-BODY-SENTINEL-must-never-leak"
CODE_LIFETIME = 600
CONSENT_LIFETIME = 600  # seconds a consent page may stay open before Allow/Deny
MAX_CONSENTS = 1000  # open consent pages remembered at once (the oldest are forgotten first)
AUTHORIZE_PARAMS = frozenset(
    {"response_type", "client_id", "redirect_uri", "scope", "state", "code_challenge", "code_challenge_method", "nonce"}
)
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
USERNAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
ID_TOKEN_LIFETIME = 3600

_current_request: contextvars.ContextVar[_HttpRequest] = contextvars.ContextVar("oauth_peer_request")


# ---------------------------------------------------------------------------------------------------------------------
# Models (authlib mixins over in-memory records)


@dataclass
class User:
    username: str
    email: str | None = None
    name: str | None = None
    sub: str = ""

    def __post_init__(self) -> None:
        self.sub = self.sub or f"sub-{self.username}"

    def claims(self) -> dict[str, Any]:
        """The OIDC claims of this user (id_token and userinfo), whatever the scope."""
        info = UserInfo(sub=self.sub, preferred_username=self.username, name=self.name or self.username.title())
        if self.email:
            info["email"] = self.email
            info["email_verified"] = True
        return dict(info)


@dataclass
class Client(ClientMixin):
    """A registered client. ``redirect_uris=None`` accepts any redirect URI (handy when the callback URL holds an id
    not known in advance); otherwise the match is exact. A confidential client authenticates with HTTP Basic or with
    ``client_secret`` in the body (only ``auth_method`` when that is set); a public client (``secret=None``) sends
    ``client_id`` alone."""

    client_id: str
    client_secret: str | None = None
    redirect_uris: list[str] | None = None
    scope: str | None = None  # None: any scope may be granted; else the allowed scopes, space-separated
    auth_method: str | None = None  # None: basic or post (confidential), none (public)
    grant_types: tuple[str, ...] = ("authorization_code", "refresh_token")
    client_metadata: dict[str, Any] = field(default_factory=dict)  # RFC 7591 metadata as registered
    registered: bool = False  # True when created through POST /register
    loopback_redirects: bool = False  # True: any http(s) redirect URI on a loopback host (the demo's client)

    @property
    def public(self) -> bool:
        return self.client_secret is None

    def get_client_id(self) -> str:
        return self.client_id

    def get_default_redirect_uri(self) -> str | None:
        return self.redirect_uris[0] if self.redirect_uris else None

    def get_allowed_scope(self, scope: str | None) -> str:
        if not scope:
            return ""
        if self.scope is None:
            return list_to_scope(scope_to_list(scope))
        allowed = set(scope_to_list(self.scope))
        return list_to_scope([s for s in scope_to_list(scope) if s in allowed])

    def check_redirect_uri(self, redirect_uri: str) -> bool:
        if self.loopback_redirects:
            # Browsers read some URLs differently from urlsplit ("http://evil.example\\@127.0.0.1/" goes to
            # evil.example): refuse backslashes, user info and escapes in the authority outright.
            if "\\" in redirect_uri or "%5c" in redirect_uri.lower():
                return False
            parts = urlsplit(redirect_uri)
            if any(char in parts.netloc for char in "@%") or parts.scheme not in ("http", "https"):
                return False
            return parts.hostname in LOOPBACK_HOSTS and not parts.fragment
        return self.redirect_uris is None or redirect_uri in self.redirect_uris

    def check_client_secret(self, client_secret: str) -> bool:
        return self.client_secret is not None and secrets.compare_digest(self.client_secret, client_secret)

    def check_endpoint_auth_method(self, method: str, endpoint: str) -> bool:
        if self.public:
            return method == "none"
        if method == "none":
            return False
        if self.auth_method and endpoint == "token":
            return method == self.auth_method
        return method in ("client_secret_basic", "client_secret_post")

    def check_response_type(self, response_type: str) -> bool:
        return response_type == "code"

    def check_grant_type(self, grant_type: str) -> bool:
        return grant_type in self.grant_types


@dataclass
class AuthorizationCode(AuthorizationCodeMixin):
    code: str
    client_id: str
    username: str
    redirect_uri: str | None
    scope: str
    family: str  # every token descended from this code shares it
    code_challenge: str | None = None
    code_challenge_method: str | None = None
    nonce: str | None = None
    auth_time: int = 0
    issued_at: float = 0.0
    used: bool = False

    def get_redirect_uri(self) -> str | None:
        return self.redirect_uri

    def get_scope(self) -> str:
        return self.scope

    def get_nonce(self) -> str | None:
        return self.nonce

    def get_auth_time(self) -> int:
        return self.auth_time

    def is_expired(self) -> bool:
        return time.time() > self.issued_at + CODE_LIFETIME


@dataclass
class Token(TokenMixin):
    """One token response: an access token and (maybe) a refresh token. ``family`` groups the tokens of one grant."""

    access_token: str
    refresh_token: str | None
    client_id: str
    username: str
    scope: str
    grant_type: str
    family: str
    issued_at: float
    expires_at: float | None  # None: the access token never expires
    refresh_expires_at: float | None = None
    access_revoked: bool = False
    refresh_revoked: bool = False
    refresh_rotated: bool = False  # the refresh token was used (and replaced); using it again is reuse
    revoked_reason: str | None = None  # "revocation", "reuse", "code_replay", "family" (test helper)
    _peer: AuthServer | None = field(default=None, repr=False, compare=False)

    @property
    def active(self) -> bool:
        """The access token is usable: neither revoked nor expired."""
        return not self.access_revoked and not self.is_expired()

    @property
    def refresh_active(self) -> bool:
        if self.refresh_token is None or self.refresh_revoked or self.refresh_rotated:
            return False
        return self.refresh_expires_at is None or time.time() < self.refresh_expires_at

    def check_client(self, client: Client) -> bool:
        return self.client_id == client.get_client_id()

    def get_scope(self) -> str:
        return self.scope

    def get_expires_in(self) -> int:
        return 0 if self.expires_at is None else int(self.expires_at - self.issued_at)

    def is_expired(self) -> bool:
        return self.expires_at is not None and time.time() >= self.expires_at

    def is_revoked(self) -> bool:
        return self.access_revoked

    def get_user(self) -> User | None:
        return self._peer.users.get(self.username) if self._peer else None

    def get_client(self) -> Client | None:
        return self._peer.clients.get(self.client_id) if self._peer else None


# ---------------------------------------------------------------------------------------------------------------------
# Records of what clients sent


@dataclass
class HttpRecord:
    method: str
    path: str
    query: str
    headers: dict[str, str]  # lower-cased names
    status: int | None = None


@dataclass
class TokenRecord:
    grant_type: str | None
    form: dict[str, str]  # the body parameters as sent (client_secret and code_verifier included)
    client_auth: str | None  # "client_secret_basic", "client_secret_post", "none" (client_id alone) or None
    client_id: str | None
    headers: dict[str, str]
    status: int | None = None
    response: Any = None  # the JSON answered

    @property
    def error(self) -> str | None:
        return self.response.get("error") if isinstance(self.response, dict) else None


@dataclass
class RevocationRecord:
    token: str | None
    token_type_hint: str | None
    client_auth: str | None  # "client_secret_basic" (HTTP Basic), "client_secret_post", "none" (client_id in body)
    client_id: str | None
    token_kind: str | None  # what the token really is here: "access_token", "refresh_token" or None (unknown)
    mode: str  # the revocation_mode in force (or "redirected" for hits on /revoke/redirected)
    host: str  # the Host header: tells the origin a redirected client went to
    headers: dict[str, str]
    form: dict[str, str]
    status: int | None = None
    revoked: bool = False  # something was actually revoked

    @property
    def redirected(self) -> bool:
        return self.mode == "redirected"


@dataclass
class RegistrationRecord:
    body: Any  # the JSON sent
    status: int | None = None
    response: Any = None


@dataclass
class AuthorizeRecord:
    params: dict[str, str]  # the query parameters (last value of each)
    status: int | None = None
    location: str | None = None  # where the browser was sent back to


# ---------------------------------------------------------------------------------------------------------------------
# authlib adapter: requests in, responses out


@dataclass
class _HttpRequest:
    method: str
    url: str
    headers: Headers
    args: list[tuple[str, str]]
    form: list[tuple[str, str]]
    json: Any = None


class _Payload(OAuth2Payload):
    def __init__(self, http: _HttpRequest) -> None:
        merged: dict[str, list[str]] = {}
        for key, value in [*http.args, *http.form]:
            merged.setdefault(key, []).append(value)
        self._datalist = merged
        self._data = {key: values[-1] for key, values in merged.items()}
        for key, value in http.form:  # the body wins over the query string
            self._data[key] = value

    @property
    def data(self) -> dict[str, str]:
        return self._data

    @property
    def datalist(self) -> dict[str, list[str]]:
        return self._datalist


class _OAuth2Request(OAuth2Request):
    def __init__(self, http: _HttpRequest) -> None:
        super().__init__(method=http.method, uri=http.url, headers=http.headers)
        self.http = http
        self.payload = _Payload(http)

    @property
    def args(self) -> dict[str, str]:
        return dict(self.http.args)

    @property
    def form(self) -> dict[str, str]:
        return dict(self.http.form)


class _JsonPayload(JsonPayload):
    def __init__(self, data: Any) -> None:
        self._data = data

    @property
    def data(self) -> Any:
        return self._data


class _JsonRequest(JsonRequest):
    def __init__(self, http: _HttpRequest) -> None:
        super().__init__(http.method, http.url, http.headers)
        self.payload = _JsonPayload(http.json if isinstance(http.json, dict) else None)


class _Server(AuthorizationServer):
    """authlib's AuthorizationServer with the adapter methods implemented over ``_HttpRequest``/Starlette."""

    def __init__(self, peer: AuthServer) -> None:
        super().__init__(scopes_supported=None)
        self.peer = peer

    def query_client(self, client_id: str) -> Client | None:
        return self.peer.clients.get(client_id)

    def save_token(self, token: dict, request: OAuth2Request) -> None:
        self.peer._save_token(token, request)

    def validate_requested_scope(self, scope: str | None) -> None:
        self.scopes_supported = self.peer.scopes_supported  # may change while the server runs
        super().validate_requested_scope(scope)

    def create_oauth2_request(self, request: Any) -> OAuth2Request:
        return request if isinstance(request, OAuth2Request) else _OAuth2Request(request)

    def create_json_request(self, request: Any) -> JsonRequest:
        return request if isinstance(request, JsonRequest) else _JsonRequest(request)

    def handle_response(self, status: int, body: Any, headers: list[tuple[str, str]]) -> Response:
        if isinstance(body, dict):
            body = json.dumps(body)
        return Response(body or b"", status_code=status, headers=dict(headers or []))

    def send_signal(self, name: str, *args, **kwargs) -> None:
        pass


class _AuthorizationCodeGrant(grants.AuthorizationCodeGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = CLIENT_AUTH_METHODS

    def save_authorization_code(self, code: str, request: OAuth2Request) -> None:
        data = request.payload.data
        record = AuthorizationCode(
            code=code,
            client_id=request.client.get_client_id(),
            username=request.user.username,
            redirect_uri=request.payload.redirect_uri,
            scope=request.scope or "",
            family=generate_token(16),
            code_challenge=data.get("code_challenge"),
            code_challenge_method=data.get("code_challenge_method"),
            nonce=data.get("nonce"),
            auth_time=int(time.time()),
            issued_at=time.time(),
        )
        self.server.peer.codes[code] = record

    def query_authorization_code(self, code: str, client: Client) -> AuthorizationCode | None:
        peer = self.server.peer
        record = peer.codes.get(code)
        if record is None or record.client_id != client.get_client_id() or record.is_expired():
            return None
        if record.used:  # replay: RFC 6749 §4.1.2 — refuse, and revoke what the code gave
            peer.code_replays += 1
            peer._revoke_family(record.family, "code_replay")
            return None
        return record

    def delete_authorization_code(self, authorization_code: AuthorizationCode) -> None:
        authorization_code.used = True

    def authenticate_user(self, authorization_code: AuthorizationCode) -> User | None:
        return self.server.peer.users.get(authorization_code.username)


class _RefreshTokenGrant(grants.RefreshTokenGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = CLIENT_AUTH_METHODS

    def issue_token(self, user: User, refresh_token: Token) -> dict:
        scope = self.request.payload.scope or refresh_token.get_scope()
        return self.generate_token(user=user, scope=scope, include_refresh_token=self.server.peer.rotate_refresh_tokens)

    def authenticate_refresh_token(self, refresh_token: str) -> Token | None:
        peer = self.server.peer
        token = peer._by_refresh.get(refresh_token)
        if token is None:
            return None
        if token.refresh_rotated:  # reuse of a rotated refresh token: kill the family
            peer.reuse_detections += 1
            peer._revoke_family(token.family, "reuse")
            return None
        return token if token.refresh_active else None

    def authenticate_user(self, refresh_token: Token) -> User | None:
        return self.server.peer.users.get(refresh_token.username)

    def revoke_old_credential(self, refresh_token: Token) -> None:
        if self.server.peer.rotate_refresh_tokens:
            refresh_token.refresh_rotated = True


class _S256CodeChallenge(CodeChallenge):
    """PKCE with S256 only, and (when ``require_pkce``) required from every client, confidential ones too."""

    SUPPORTED_CODE_CHALLENGE_METHOD = ["S256"]

    def __init__(self, peer: AuthServer) -> None:
        super().__init__(required=True)
        self.peer = peer

    def validate_code_challenge(self, grant, redirect_uri: str) -> None:
        data = grant.request.payload.data
        if self.peer.require_pkce and not data.get("code_challenge"):
            raise InvalidRequestError("Missing 'code_challenge'")
        if data.get("code_challenge") and data.get("code_challenge_method") != "S256":
            raise InvalidRequestError("'code_challenge_method' must be S256")
        super().validate_code_challenge(grant, redirect_uri)


class _OpenIDCode(OpenIDCode):
    def __init__(self, peer: AuthServer) -> None:
        super().__init__(require_nonce=False)
        self.peer = peer

    def exists_nonce(self, nonce: str, request: OAuth2Request) -> bool:
        client_id = request.payload.client_id
        return any(c.nonce == nonce and c.client_id == client_id for c in self.peer.codes.values())

    def resolve_client_private_key(self, client: Client) -> RSAKey:
        return self.peer._key

    def get_client_algorithm(self, client: Client) -> str:
        return "RS256"

    def get_encode_header(self, client: Client) -> dict:
        return {"alg": "RS256", "kid": self.peer._key.kid}

    def get_client_claims(self, client: Client) -> dict:
        now = int(time.time())
        return {"iss": self.peer.issuer, "aud": [client.get_client_id()], "iat": now, "exp": now + ID_TOKEN_LIFETIME}

    def generate_user_info(self, user: User, scope: str) -> UserInfo:
        return UserInfo(user.claims())


class _RevocationEndpoint(RevocationEndpoint):
    CLIENT_AUTH_METHODS = CLIENT_AUTH_METHODS

    def query_token(self, token_string: str, token_type_hint: str | None) -> Token | None:
        peer = self.server.peer
        return peer._by_access.get(token_string) or peer._by_refresh.get(token_string)

    def revoke_token(self, token: Token, request: OAuth2Request) -> None:
        peer = self.server.peer
        value = request.form.get("token")
        if value == token.refresh_token:  # RFC 7009 §2.1: the access tokens of that grant go too
            peer._revoke_family(token.family, "revocation")
        else:
            token.access_revoked = True
            token.revoked_reason = token.revoked_reason or "revocation"
        request.revoked = True


class _RegistrationEndpoint(ClientRegistrationEndpoint):
    def authenticate_token(self, request: JsonRequest) -> bool:
        return True  # open registration: no initial access token

    def get_server_metadata(self) -> dict:
        return self.server.peer.metadata()

    def generate_client_info(self, request: JsonRequest) -> dict:
        info = super().generate_client_info(request)
        data = request.payload.data or {}
        if data.get("token_endpoint_auth_method") == "none":
            info.pop("client_secret", None)
            info.pop("client_secret_expires_at", None)
        return info

    def save_client(self, client_info: dict, client_metadata: dict, request: JsonRequest) -> Client:
        peer = self.server.peer
        method = client_metadata.get("token_endpoint_auth_method", "client_secret_basic")
        grant_types = client_metadata.get("grant_types") or ["authorization_code", "refresh_token"]  # lenient
        client = Client(
            client_id=client_info["client_id"],
            client_secret=client_info.get("client_secret"),
            redirect_uris=list(client_metadata.get("redirect_uris") or []),
            scope=client_metadata.get("scope"),
            auth_method=None if method == "none" else method,
            grant_types=tuple(grant_types),
            client_metadata=dict(client_metadata),
            registered=True,
        )
        peer.clients[client.client_id] = client
        return client


class _ResourceProtector(ResourceProtector):
    def acquire_token(self, scopes: Any = None, **kwargs) -> Token:
        """What authlib's UserInfoEndpoint calls: validate the current request's Bearer token."""
        if isinstance(scopes, str):
            scopes = [scopes]
        return self.validate_request(scopes, _current_request.get())


class _BearerValidator(BearerTokenValidator):
    def __init__(self, peer: AuthServer) -> None:
        super().__init__()
        self.peer = peer

    def authenticate_token(self, token_string: str) -> Token | None:
        return self.peer._by_access.get(token_string)


class _UserInfoEndpoint(UserInfoEndpoint):
    def get_issuer(self) -> str:
        return self.server.peer.issuer

    def generate_user_info(self, user: User, scope: str) -> UserInfo:
        return UserInfo(user.claims())

    def resolve_private_key(self) -> RSAKey:
        return self.server.peer._key


# ---------------------------------------------------------------------------------------------------------------------
# The server


def protected_resource_metadata(resource: str, authorization_servers: list[str], **extra: Any) -> dict[str, Any]:
    """An RFC 9728 protected-resource metadata document."""
    document: dict[str, Any] = {
        "resource": resource,
        "authorization_servers": list(authorization_servers),
        "bearer_methods_supported": ["header"],
    }
    document.update(extra)
    return document


@dataclass(eq=False)
class AuthServer:
    """A running authorization server. Options are attributes; change them at any time."""

    issuer_path: str = ""
    logged_in_user: str | None = "alice"
    deny: bool | str = False
    access_token_lifetime: int | None = 3600
    refresh_token_lifetime: int | None = None
    rotate_refresh_tokens: bool = True
    issue_refresh_tokens: bool = True
    require_pkce: bool = True
    revocation_mode: str = "revoke"
    revocation_redirect_to: str | None = None  # overrides where the redirect modes point
    oauth_metadata: bool = True
    oauth_metadata_path_aware: bool = True
    openid_configuration: bool = True
    registration: bool = True
    revocation: bool = True
    scopes_supported: list[str] | None = None  # None: any scope is accepted (and none is advertised)
    metadata_extra: dict[str, Any] | None = None  # merged into the metadata; a None value removes that key
    token_delay: float = 0.0  # seconds every token request waits before it is handled (to overlap refreshes)
    token_endpoint_status: int | None = None  # answer every token request with this status (TOKEN_BODY_SENTINEL)
    consent: bool = False  # True: /authorize shows a consent page (the demo); False: decide at once (tests)
    keep_records: bool = True  # False: do not keep what clients sent (a long-running demo would only grow)

    base_url: str = ""
    clients: dict[str, Client] = field(default_factory=dict)
    users: dict[str, User] = field(default_factory=dict)
    codes: dict[str, AuthorizationCode] = field(default_factory=dict)
    tokens: list[Token] = field(default_factory=list)
    requests: list[HttpRecord] = field(default_factory=list)
    authorize_requests: list[AuthorizeRecord] = field(default_factory=list)
    token_requests: list[TokenRecord] = field(default_factory=list)
    token_calls: Counter = field(default_factory=Counter)  # grant_type → requests that reached /token
    revocations: list[RevocationRecord] = field(default_factory=list)
    registrations: list[RegistrationRecord] = field(default_factory=list)
    reuse_detections: int = 0
    code_replays: int = 0

    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False)
    _by_access: dict[str, Token] = field(default_factory=dict, repr=False)
    _by_refresh: dict[str, Token] = field(default_factory=dict, repr=False)
    _stops: list[Callable[[], None]] = field(default_factory=list, repr=False)
    # consent-page ticket → (issued at, the request it was issued for)
    _consents: dict[str, tuple[float, str]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if self.issuer_path and not self.issuer_path.startswith("/"):
            self.issuer_path = "/" + self.issuer_path
        self.issuer_path = self.issuer_path.rstrip("/")
        if self.revocation_mode not in REVOCATION_MODES:
            raise ValueError(f"unknown revocation_mode {self.revocation_mode!r}; one of {sorted(REVOCATION_MODES)}")
        self._key = RSAKey.generate_key(2048, parameters={"kid": generate_token(8), "use": "sig", "alg": "RS256"})
        self.authz = _Server(self)
        generator = BearerTokenGenerator(
            lambda **kw: "at_" + generate_token(40),
            lambda **kw: "rt_" + generate_token(48),
            lambda client, grant_type: self.access_token_lifetime or 0,
        )

        def generate(grant_type, client, user=None, scope=None, expires_in=None, include_refresh_token=True):
            return generator(
                grant_type=grant_type,
                client=client,
                user=user,
                scope=scope,
                expires_in=expires_in,
                include_refresh_token=include_refresh_token and self.issue_refresh_tokens,
            )

        self.authz.register_token_generator("default", generate)
        self.authz.register_grant(_AuthorizationCodeGrant, [_S256CodeChallenge(self), _OpenIDCode(self)])
        self.authz.register_grant(_RefreshTokenGrant)
        self.authz.register_endpoint(_RevocationEndpoint)
        self.authz.register_endpoint(_RegistrationEndpoint(self.authz))
        self.resource_protector = _ResourceProtector()
        self.resource_protector.register_token_validator(_BearerValidator(self))
        self.authz.register_endpoint(_UserInfoEndpoint(resource_protector=self.resource_protector))
        if self.logged_in_user:
            self.add_user(self.logged_in_user)

    # -- addresses -----------------------------------------------------------------------------------------------

    def url(self, path: str = "") -> str:
        """``base_url + path`` (``path`` as is: include the issuer path yourself when you want it)."""
        return self.base_url + path

    @property
    def port(self) -> int:
        return int(self.base_url.rsplit(":", 1)[1])

    @property
    def issuer(self) -> str:
        return self.base_url + self.issuer_path

    @property
    def authorization_endpoint(self) -> str:
        return self.issuer + "/authorize"

    @property
    def token_endpoint(self) -> str:
        return self.issuer + "/token"

    @property
    def revocation_endpoint(self) -> str:
        return self.issuer + "/revoke"

    @property
    def registration_endpoint(self) -> str:
        return self.issuer + "/register"

    @property
    def userinfo_endpoint(self) -> str:
        return self.issuer + "/userinfo"

    @property
    def jwks_uri(self) -> str:
        return self.issuer + "/jwks"

    @property
    def metadata_url(self) -> str:
        """Where RFC 8414 says the metadata is: path-aware when the issuer has a path."""
        return self.base_url + "/.well-known/oauth-authorization-server" + self.issuer_path

    @property
    def openid_configuration_url(self) -> str:
        return self.issuer + "/.well-known/openid-configuration"

    def jwks(self) -> dict[str, Any]:
        return KeySet([self._key]).as_dict(private=False)

    def metadata(self) -> dict[str, Any]:
        """The authorization server metadata (RFC 8414 and OpenID discovery: the same document)."""
        document: dict[str, Any] = {
            "issuer": self.issuer,
            "authorization_endpoint": self.authorization_endpoint,
            "token_endpoint": self.token_endpoint,
            "userinfo_endpoint": self.userinfo_endpoint,
            "jwks_uri": self.jwks_uri,
            "response_types_supported": ["code"],
            "response_modes_supported": ["query"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "token_endpoint_auth_methods_supported": list(CLIENT_AUTH_METHODS),
            "code_challenge_methods_supported": ["S256"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"],
            "claims_supported": ["sub", "iss", "aud", "preferred_username", "name", "email", "email_verified"],
        }
        if self.revocation:
            document["revocation_endpoint"] = self.revocation_endpoint
            document["revocation_endpoint_auth_methods_supported"] = list(CLIENT_AUTH_METHODS)
        if self.registration:
            document["registration_endpoint"] = self.registration_endpoint
        if self.scopes_supported is not None:
            document["scopes_supported"] = list(self.scopes_supported)
        for key, value in (self.metadata_extra or {}).items():
            if value is None:
                document.pop(key, None)
            else:
                document[key] = value
        return document

    def protected_resource_metadata(self, resource: str, **extra: Any) -> dict[str, Any]:
        """An RFC 9728 document naming this server as the resource's authorization server."""
        return protected_resource_metadata(resource, [self.issuer], **extra)

    # -- set-up --------------------------------------------------------------------------------------------------

    def add_user(self, username: str, email: str | None = "", name: str | None = None, sub: str = "") -> User:
        """Add (or replace) a user. ``email=""`` → ``<username>@example.test``; ``email=None`` → no email claim."""
        user = User(username, f"{username}@example.test" if email == "" else email, name, sub)
        with self._lock:
            self.users[username] = user
        return user

    def add_client(
        self,
        client_id: str | None = None,
        secret: str | None = None,
        redirect_uris: list[str] | None = None,
        public: bool = False,
        *,
        scope: str | None = None,
        auth_method: str | None = None,
        grant_types: tuple[str, ...] = ("authorization_code", "refresh_token"),
    ) -> Client:
        """Pre-register a client. Confidential unless ``public``; a confidential client without ``secret`` gets a
        generated one (read it on the returned ``Client.client_secret``). ``redirect_uris=None`` accepts any."""
        if public and secret:
            raise ValueError("a public client has no secret")
        client = Client(
            client_id=client_id or "client-" + generate_token(10),
            client_secret=None if public else (secret or generate_token(32)),
            redirect_uris=None if redirect_uris is None else list(redirect_uris),
            scope=scope,
            auth_method=auth_method,
            grant_types=tuple(grant_types),
        )
        with self._lock:
            self.clients[client.client_id] = client
        return client

    # -- tokens --------------------------------------------------------------------------------------------------

    def _save_token(self, token: dict, request: OAuth2Request) -> None:
        if request.authorization_code is not None:
            family = request.authorization_code.family
        else:
            family = request.refresh_token.family
        self._store(token, request.client.get_client_id(), request.user.username, family, request.payload.grant_type)

    def _store(self, token: dict, client_id: str, username: str, family: str, grant_type: str) -> Token:
        now = time.time()
        expires_in = token.get("expires_in")
        record = Token(
            access_token=token["access_token"],
            refresh_token=token.get("refresh_token"),
            client_id=client_id,
            username=username,
            scope=token.get("scope") or "",
            grant_type=grant_type,
            family=family,
            issued_at=now,
            expires_at=now + expires_in if expires_in else None,
            refresh_expires_at=now + self.refresh_token_lifetime if self.refresh_token_lifetime else None,
            _peer=self,
        )
        self.tokens.append(record)
        self._by_access[record.access_token] = record
        if record.refresh_token:
            self._by_refresh[record.refresh_token] = record
        return record

    def _revoke_family(self, family: str, reason: str) -> None:
        for token in self.tokens:
            if token.family == family:
                if not token.access_revoked or not token.refresh_revoked:
                    token.revoked_reason = token.revoked_reason or reason
                token.access_revoked = True
                token.refresh_revoked = True

    def mint_tokens(
        self, client_id: str, username: str | None = None, scope: str = "", *, refresh: bool = True
    ) -> dict[str, Any]:
        """Issue a token response directly (a new family), without a flow: for seeding a client's stored tokens.
        Returns the token response dict (``access_token``, ``refresh_token``, ``expires_in``, ``scope``…)."""
        username = username or self.logged_in_user
        with self._lock:
            if username not in self.users:
                self.add_user(username)
            client = self.clients[client_id]
            token = self.authz.generate_token(
                "authorization_code", client, self.users[username], scope, include_refresh_token=refresh
            )
            self._store(token, client_id, username, generate_token(16), "minted")
        return token

    def token(self, value: str) -> Token | None:
        """The record of an access or refresh token, by its value."""
        with self._lock:
            return self._by_access.get(value) or self._by_refresh.get(value)

    def family(self, value: str) -> list[Token]:
        """Every token of the family of that access or refresh token, oldest first."""
        record = self.token(value)
        with self._lock:
            return [t for t in self.tokens if record and t.family == record.family]

    def validate_bearer(self, token_or_header: str | None, scopes: list[str] | str | None = None) -> Token | None:
        """The active access-token record for a token value or an ``Authorization: Bearer …`` header value, or None
        (unknown, expired, revoked, or lacking one of ``scopes``). The record says for which ``client_id`` and
        ``username`` it was issued. Thread-safe: a resource server in another thread may call it."""
        if not token_or_header:
            return None
        parts = token_or_header.split(None, 1)
        if len(parts) == 2:
            if parts[0].lower() != "bearer":
                return None
            token_or_header = parts[1].strip()
        if isinstance(scopes, str):
            scopes = [scopes]
        validator = self.resource_protector.get_token_validator("bearer")
        with self._lock:
            record = validator.authenticate_token(token_or_header)
            try:
                validator.validate_token(record, scopes, None)
            except OAuth2Error:
                return None
            return record

    def expire_access_tokens(self, value: str | None = None) -> None:
        """Make every access token (or the one with that value) expired now, without sleeping."""
        with self._lock:
            for token in self.tokens:
                if value is None or value in (token.access_token, token.refresh_token):
                    token.expires_at = time.time() - 1

    def revoke_all(self) -> None:
        """Revoke every token, as if the user had withdrawn every grant at the provider."""
        with self._lock:
            for token in self.tokens:
                token.access_revoked = token.refresh_revoked = True
                token.revoked_reason = token.revoked_reason or "family"

    def _record(self, records: list, record: Any) -> None:
        if self.keep_records:
            records.append(record)

    # -- snapshots -----------------------------------------------------------------------------------------------

    def snapshot(self) -> list[HttpRecord]:
        with self._lock:
            return list(self.requests)

    def paths(self) -> list[str]:
        """The paths requested so far, in order (handy to check a discovery order)."""
        return [r.path for r in self.snapshot()]

    def reset_records(self) -> None:
        """Forget recorded requests and counters (tokens, clients and users stay)."""
        with self._lock:
            self.requests.clear()
            self.authorize_requests.clear()
            self.token_requests.clear()
            self.token_calls.clear()
            self.revocations.clear()
            self.registrations.clear()
            self.reuse_detections = self.code_replays = 0

    def stop(self) -> None:
        while self._stops:
            self._stops.pop()()

    # -- HTTP ----------------------------------------------------------------------------------------------------

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        if scope["type"] != "http":
            return
        request = Request(scope, receive)
        record = HttpRecord(
            scope["method"],
            scope["path"],
            scope.get("query_string", b"").decode("latin-1"),
            {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]},
        )
        with self._lock:
            self._record(self.requests, record)
        try:
            response = await self._dispatch(request)
        except Exception as exc:  # a bug in the peer: say so loudly rather than hang the client
            response = JSONResponse(
                {"error": "server_error", "error_description": f"demo authorization server: {exc!r}"}, 500
            )
        record.status = response.status_code
        await response(scope, receive, send)

    async def _dispatch(self, request: Request) -> Response:
        path, method, p = request.url.path, request.method, self.issuer_path
        well_known = "/.well-known/oauth-authorization-server"
        openid = "/.well-known/openid-configuration"
        if method == "GET":
            if (path == well_known and self.oauth_metadata) or (
                p and path == well_known + p and self.oauth_metadata_path_aware
            ):
                return JSONResponse(self.metadata())
            if path in (p + openid, openid + p) and self.openid_configuration:
                return JSONResponse(self.metadata())
            if path == p + "/jwks":
                return JSONResponse(self.jwks())
        routes: dict[str, tuple[tuple[str, ...], Callable]] = {
            p + "/authorize": (("GET", "POST") if self.consent else ("GET",), self._authorize),
            p + "/token": (("POST",), self._token),
            p + "/userinfo": (("GET", "POST"), self._userinfo),
        }
        if self.revocation:
            routes[p + "/revoke"] = (("POST",), self._revoke)
            routes[p + "/revoke/redirected"] = (("POST",), self._revoke_redirected)
        if self.registration:
            routes[p + "/register"] = (("POST",), self._register)
        if path not in routes:
            return JSONResponse({"error": "not_found"}, 404)
        methods, handler = routes[path]
        if method not in methods:
            return JSONResponse({"error": "method_not_allowed"}, 405, headers={"allow": ", ".join(methods)})
        return await handler(request, await _read(request))

    async def _authorize(self, request: Request, http: _HttpRequest) -> Response:
        if self.consent:
            return await self._consent(http)
        record = AuthorizeRecord(dict(http.args))
        with self._lock:
            self._record(self.authorize_requests, record)
            user = self.users.get(self.logged_in_user) if self.logged_in_user else None
            try:
                grant = self.authz.get_consent_grant(http, end_user=user)
            except (OAuth2Error, ValueError) as error:
                response = _error_response(self.authz, error)
            else:
                refusal = "login_required" if user is None else ("access_denied" if self.deny is True else self.deny)
                if refusal:
                    response = _refusal(grant, refusal)
                else:
                    response = self.authz.create_authorization_response(grant.request, grant_user=user, grant=grant)
        record.status = response.status_code
        record.location = response.headers.get("location")
        return response

    async def _consent(self, http: _HttpRequest) -> Response:
        """The demo's consent page: GET shows it for a valid request, POST (Allow or Deny) decides it. The request's
        parameters travel in hidden fields with a single-use ticket bound to them, so a page elsewhere cannot decide for
        the user, nor a ticket decide another request."""
        form = dict(http.form) if http.method == "POST" else None
        if form is not None:
            params = [(key, value) for key, value in http.form if key in AUTHORIZE_PARAMS]
            http = _HttpRequest("GET", self.authorization_endpoint + "?" + urlencode(params), http.headers, params, [])
        record = AuthorizeRecord(dict(http.args))
        with self._lock:
            self._record(self.authorize_requests, record)
            try:
                grant = self.authz.get_consent_grant(http, end_user=None)
            except (OAuth2Error, ValueError) as error:
                response = _error_response(self.authz, error)
            else:
                if form is not None:
                    response = self._decide(grant, form)
                else:
                    response = self._consent_page(grant, http.args)
        record.status = response.status_code
        record.location = response.headers.get("location")
        return response

    def _decide(self, grant, form: dict[str, str]) -> Response:
        params = [(key, value) for key, value in form.items() if key in AUTHORIZE_PARAMS]
        issued, request_digest = self._consents.pop(form.get("ticket", ""), (None, ""))
        if issued is None or time.time() - issued > CONSENT_LIFETIME or request_digest != _digest(params):
            return _page(
                "This consent page is no longer valid",
                "<p>It expired or was already answered. Go back to the application and connect again.</p>",
                400,
            )
        if form.get("decision") != "allow":
            return _refusal(grant, "access_denied")
        username = form.get("username", "").strip()
        if not username or len(username) > 64 or not set(username) <= USERNAME_CHARS:
            self._consents[form["ticket"]] = (issued, request_digest)  # let the user correct the name
            return self._consent_page(
                grant,
                params,
                error="Use 1 to 64 letters, digits, dots, dashes or underscores.",
                username=username,
                ticket=form["ticket"],
            )
        user = self.users.get(username) or self.add_user(username)
        return self.authz.create_authorization_response(grant.request, grant_user=user, grant=grant)

    def _consent_page(
        self,
        grant,
        params: list[tuple[str, str]],
        *,
        error: str = "",
        username: str | None = None,
        ticket: str | None = None,
    ) -> Response:
        if ticket is None:
            ticket = generate_token(32)
            while len(self._consents) >= MAX_CONSENTS:
                self._consents.pop(next(iter(self._consents)))
            self._consents[ticket] = (time.time(), _digest(params))
        client = grant.client
        client_name = client.client_metadata.get("client_name") or client.get_client_id()
        scopes = scope_to_list(grant.request.payload.scope or "") or []
        hidden = "".join(
            f'<input type="hidden" name="{escape(key)}" value="{escape(value)}">'
            for key, value in params
            if key in AUTHORIZE_PARAMS
        )
        scope_items = "".join(f"<li><code>{escape(scope)}</code></li>" for scope in scopes) or "<li>Basic access</li>"
        name = (self.logged_in_user or "demo") if username is None else username
        body = f"""
<p><strong>{escape(client_name)}</strong> asks to use the demo tools on your behalf, with these permissions:</p>
<ul>{scope_items}</ul>
<form method="post" action="{escape(self.authorization_endpoint)}">
  {hidden}<input type="hidden" name="ticket" value="{escape(ticket)}">
  <label for="username">Your name at this demo provider</label>
  <input id="username" name="username" value="{escape(name)}" autocomplete="username" maxlength="64" required
    aria-describedby="username-help{" username-error" if error else ""}"{' aria-invalid="true"' if error else ""}>
  <p id="username-help" class="help">There are no passwords here: any name signs you in. Tokens are kept in memory
  and forgotten when the demo server restarts.</p>
  {f'<p id="username-error" class="error" role="alert">{escape(error)}</p>' if error else ""}
  <div class="actions">
    <button type="submit" name="decision" value="allow">Allow</button>
    <button type="submit" name="decision" value="deny" formnovalidate class="secondary">Deny</button>
  </div>
</form>
<p class="help">Sends you back to <code>{escape(urlsplit(grant.redirect_uri).netloc)}</code>.</p>"""
        return _page(f"Connect {client_name}", body, 200)

    async def _token(self, request: Request, http: _HttpRequest) -> Response:
        form = dict(http.form)
        record = TokenRecord(
            form.get("grant_type"),
            form,
            _client_auth(http),
            _client_id(http),
            {k.lower(): v for k, v in http.headers.items()},
        )
        with self._lock:
            self._record(self.token_requests, record)
            self.token_calls[record.grant_type] += 1
        if self.token_delay:
            await anyio.sleep(self.token_delay)
        if self.token_endpoint_status is not None:
            body = {"error": "server_error", "error_description": TOKEN_BODY_SENTINEL}
            response: Response = JSONResponse(body, self.token_endpoint_status)
        else:
            with self._lock:
                response = self.authz.create_token_response(http)
        record.status = response.status_code
        record.response = _json(response)
        return response

    async def _revoke(self, request: Request, http: _HttpRequest, *, mode: str | None = None) -> Response:
        mode = mode or self.revocation_mode
        form = dict(http.form)
        with self._lock:
            value = form.get("token")
            kind = None
            if value in self._by_access:
                kind = "access_token"
            elif value in self._by_refresh:
                kind = "refresh_token"
            record = RevocationRecord(
                token=value,
                token_type_hint=form.get("token_type_hint"),
                client_auth=_client_auth(http),
                client_id=_client_id(http),
                token_kind=kind,
                mode=mode,
                host=http.headers.get("host", ""),
                headers={k.lower(): v for k, v in http.headers.items()},
                form=form,
            )
            self._record(self.revocations, record)
            response = self._revocation_answer(http, record)
        record.status = response.status_code
        return response

    def _revocation_answer(self, http: _HttpRequest, record: RevocationRecord) -> Response:
        mode = record.mode
        if mode.startswith("redirect_"):
            target = self.revocation_redirect_to
            if target is None:
                host = "localhost" if mode == "redirect_cross_origin" else "127.0.0.1"
                target = f"http://{host}:{self.port}{self.issuer_path}/revoke/redirected"
            return Response(status_code=307, headers={"location": target})
        if mode == "error":
            body = {"error": "temporarily_unavailable", "error_description": REVOCATION_BODY_SENTINEL}
            return JSONResponse(body, 503)
        if mode in ("accepted", "unsupported_refresh"):
            oauth_request = _OAuth2Request(http)
            try:
                self.authz.authenticate_client(oauth_request, CLIENT_AUTH_METHODS, "revocation")
            except OAuth2Error as error:
                return self.authz.handle_error_response(oauth_request, error)
            if mode == "accepted":
                return JSONResponse({}, 202)
            if record.token_kind == "refresh_token" or (
                record.token_kind is None and record.token_type_hint == "refresh_token"
            ):
                return JSONResponse(
                    {"error": "unsupported_token_type", "error_description": "Refresh tokens cannot be revoked."}, 400
                )
        oauth_request = _OAuth2Request(http)
        oauth_request.revoked = False
        response = self.authz.create_endpoint_response("revocation", oauth_request)
        record.revoked = oauth_request.revoked
        if mode == "no_content" and response.status_code == 200:
            return Response(status_code=204)
        return response

    async def _revoke_redirected(self, request: Request, http: _HttpRequest) -> Response:
        return await self._revoke(request, http, mode="redirected")

    async def _register(self, request: Request, http: _HttpRequest) -> Response:
        record = RegistrationRecord(http.json)
        with self._lock:
            self._record(self.registrations, record)
            try:
                response = self.authz.create_endpoint_response("client_registration", http)
            except OAuth2Error as error:  # authlib's registration endpoint raises rather than answers
                response = self.authz.handle_error_response(None, error)
        record.status = response.status_code
        record.response = _json(response)
        return response

    async def _userinfo(self, request: Request, http: _HttpRequest) -> Response:
        reset = _current_request.set(http)
        try:
            with self._lock:
                return self.authz.create_endpoint_response("userinfo", http)
        finally:
            _current_request.reset(reset)


class BearerGate:
    """ASGI middleware for a protected resource: serves RFC 9728 metadata and lets a request through only with a
    valid access token of ``oauth`` (``Authorization: Bearer …``). Otherwise 401 with ``WWW-Authenticate: Bearer
    resource_metadata="<PRM URL>"`` (plus ``error="invalid_token"`` when a token was sent).

    ``resource_metadata``: "both" serves ``/.well-known/oauth-protected-resource{resource_path}`` and the root
    ``/.well-known/oauth-protected-resource``; "path" or "root" only that one; None neither (and the 401 has no
    ``resource_metadata`` parameter). ``checks`` records (path, Token or None) for each gated request."""

    def __init__(
        self,
        app: Callable,
        oauth: AuthServer,
        *,
        resource_path: str = "/mcp",
        scopes: list[str] | None = None,
        resource_metadata: str | None = "both",
        keep_checks: bool = True,
    ) -> None:
        if resource_metadata not in ("both", "path", "root", None):
            raise ValueError(f"unknown resource_metadata {resource_metadata!r}")
        self.app = app
        self.oauth = oauth
        self.resource_path = resource_path
        self.scopes = scopes
        self.resource_metadata = resource_metadata
        self.checks: list[tuple[str, Token | None]] = []
        self.keep_checks = keep_checks

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        base = f"{scope.get('scheme', 'http')}://{headers.get('host', '')}"
        prm_root = "/.well-known/oauth-protected-resource"
        prm_path = prm_root + self.resource_path
        served = {"both": (prm_path, prm_root), "path": (prm_path,), "root": (prm_root,), None: ()}[
            self.resource_metadata
        ]
        path = scope["path"]
        if path.startswith("/.well-known/"):
            if path in served and scope["method"] == "GET":
                scopes = {"scopes_supported": self.scopes} if self.scopes else {}
                document = self.oauth.protected_resource_metadata(base + self.resource_path, **scopes)
                response: Response = JSONResponse(document)
            else:
                response = JSONResponse({"error": "not_found"}, 404)
            await response(scope, receive, send)
            return
        auth = headers.get("authorization")
        token = self.oauth.validate_bearer(auth, self.scopes)
        if self.keep_checks:
            self.checks.append((path, token))
        if token is None:
            challenge = "Bearer"
            parameters = []
            if served:
                parameters.append(f'resource_metadata="{base}{served[0]}"')
            if auth:
                parameters.append('error="invalid_token"')
            if self.scopes:
                parameters.append(f'scope="{" ".join(self.scopes)}"')
            if parameters:
                challenge += " " + ", ".join(parameters)
            body = {"error": "invalid_token" if auth else "unauthorized"}
            await JSONResponse(body, 401, headers={"www-authenticate": challenge})(scope, receive, send)
            return
        await self.app(scope, receive, send)


# ---------------------------------------------------------------------------------------------------------------------
# Plumbing


async def _read(request: Request) -> _HttpRequest:
    body = await request.body()
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    form: list[tuple[str, str]] = []
    data = None
    if content_type == "application/x-www-form-urlencoded":
        form = parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True)
    elif content_type == "application/json":  # not sniffed: a page elsewhere can POST text/plain without asking
        try:
            data = json.loads(body)
        except ValueError:
            data = None
    args = parse_qsl(request.url.query, keep_blank_values=True)
    return _HttpRequest(request.method, str(request.url), request.headers, args, form, data)


def _digest(params: list[tuple[str, str]]) -> str:
    """What identifies an authorization request: its OAuth parameters, in a canonical order."""
    return json.dumps(sorted((key, value) for key, value in params if key in AUTHORIZE_PARAMS))


def _error_response(authz: AuthorizationServer, error: OAuth2Error | ValueError) -> Response:
    """authlib's answer to a refused authorization request, or a plain 400 when authlib could not even build its error
    (it refuses to echo characters such as a backslash of the request in an error description: ValueError)."""
    if isinstance(error, OAuth2Error):
        return authz.handle_error_response(None, error)
    return JSONResponse({"error": "invalid_request", "error_description": "The request is not valid."}, 400)


def _refusal(grant, error: str) -> Response:
    """Send the browser back to the client with ``error`` (and the request's ``state``)."""
    params = [("error", error)]
    if grant.request.payload.state:
        params.append(("state", grant.request.payload.state))
    return Response(status_code=302, headers={"location": add_params_to_uri(grant.redirect_uri, params)})


PAGE_STYLE = """
body { font: 16px/1.5 system-ui, sans-serif; background: #f4f5f7; color: #1c1e21; margin: 0; }
main { max-width: 28rem; margin: 4rem auto; background: #fff; border: 1px solid #d0d4da; border-radius: 8px;
  padding: 1.5rem 2rem; }
.brand { color: #5b6470; font-size: .875rem; margin: 0; }
h1 { font-size: 1.4rem; margin: .25rem 0 1rem; }
label { display: block; font-weight: 600; margin-top: 1rem; }
input[name=username] { width: 100%; box-sizing: border-box; font: inherit; padding: .4rem .5rem; margin-top: .25rem;
  border: 1px solid #8a929c; border-radius: 4px; }
.help { color: #5b6470; font-size: .875rem; }
.error { color: #b3261e; font-weight: 600; }
.actions { display: flex; gap: .75rem; margin-top: 1rem; }
button { font: inherit; padding: .45rem 1.2rem; border-radius: 4px; border: 1px solid #1d4ed8; background: #1d4ed8;
  color: #fff; cursor: pointer; }
button.secondary { background: #fff; color: #1d4ed8; }
button:focus-visible, input:focus-visible { outline: 3px solid #f59e0b; outline-offset: 2px; }
"""


def _page(title: str, body: str, status: int) -> Response:
    """A small self-contained HTML page: no script, not frameable, never cached."""
    html = (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
        f'<meta name="viewport" content="width=device-width, initial-scale=1"><style>{PAGE_STYLE}</style></head>'
        f'<body><main><p class="brand">Demo authorization server</p><h1>{escape(title)}</h1>{body}</main></body></html>'
    )
    headers = {
        "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
        "x-frame-options": "DENY",
        "cache-control": "no-store",
        "referrer-policy": "no-referrer",
    }
    return Response(html, status_code=status, media_type="text/html", headers=headers)


def _client_auth(http: _HttpRequest) -> str | None:
    if http.headers.get("authorization", "").lower().startswith("basic "):
        return "client_secret_basic"
    form = dict(http.form)
    if form.get("client_secret"):
        return "client_secret_post"
    if form.get("client_id"):
        return "none"
    return None


def _client_id(http: _HttpRequest) -> str | None:
    auth = http.headers.get("authorization", "")
    if auth.lower().startswith("basic "):
        try:
            decoded = base64.b64decode(auth.split(None, 1)[1]).decode("utf-8")
        except (ValueError, IndexError):
            return None
        return unquote(decoded.split(":", 1)[0])
    return dict(http.form).get("client_id")


def _json(response: Response) -> Any:
    try:
        return json.loads(response.body) if response.body else None
    except ValueError:
        return None


# ---------------------------------------------------------------------------------------------------------------------
# The demo: this server and the demo MCP tools behind its tokens, on one port (``make run``)

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8766
DEMO_CLIENT_ID = "switchboard-demo"
DEMO_SCOPE = "tools"
DEMO_ACCESS_TOKEN_LIFETIME = 900  # seconds: short enough that refreshing shows within a demo session
MCP_PATH = "/mcp"


class WhoAmI(BaseModel):
    username: str = Field(description="The name you gave on the demo provider's consent page.")
    client_id: str = Field(description="The OAuth client the token was issued to.")
    scope: str = Field(description="The scopes granted, space-separated.")
    expires_in: int | None = Field(description="Seconds until this access token expires (None: never).")


def build_demo(base_url: str) -> tuple[AuthServer, Callable]:
    """The demo authorization server (consent page, the public client ``switchboard-demo``) and one ASGI app serving
    it with the demo MCP tools at ``/mcp`` that require its tokens with the ``tools`` scope."""
    from .demo_server import build

    server = AuthServer(
        consent=True,
        keep_records=False,
        registration=False,  # its one client is registered here; open registration would let anyone add one
        logged_in_user=None,
        access_token_lifetime=DEMO_ACCESS_TOKEN_LIFETIME,
        scopes_supported=[DEMO_SCOPE, "openid", "profile", "email"],
        base_url=base_url.rstrip("/"),
    )
    client = server.add_client(DEMO_CLIENT_ID, public=True)
    client.loopback_redirects = True
    client.client_metadata["client_name"] = "Switchboard"

    mcp = build(title="Demo tools (OAuth)")

    def whoami(ctx: Context) -> WhoAmI:
        """Who the demo provider thinks you are: the identity behind the access token of this call."""
        request = ctx.request_context.request
        token = server.validate_bearer(request.headers.get("authorization") if request is not None else None)
        if token is None:  # the gate let the request in, so this only happens if the token expired meanwhile
            raise ToolError("The access token of this call is no longer valid.")
        expires_in = None if token.expires_at is None else max(0, int(token.expires_at - time.time()))
        return WhoAmI(username=token.username, client_id=token.client_id, scope=token.scope, expires_in=expires_in)

    mcp.add_tool(whoami, description=(whoami.__doc__ or "").strip())
    host = urlsplit(base_url).hostname or DEFAULT_HOST
    tools = mcp.streamable_http_app(streamable_http_path=MCP_PATH, host=host)
    gate = BearerGate(tools, server, resource_path=MCP_PATH, scopes=[DEMO_SCOPE], keep_checks=False)

    async def app(scope: dict, receive: Callable, send: Callable) -> None:
        path = scope.get("path", "")
        if (
            scope["type"] == "lifespan"
            or path == MCP_PATH
            or path.startswith((MCP_PATH + "/", "/.well-known/oauth-protected-resource"))
        ):
            await gate(scope, receive, send)  # the gate passes lifespan events on to the MCP app
        else:
            await server(scope, receive, send)

    return server, app


def main(argv: Sequence[str] | None = None) -> int:
    from .demo_server import serve, uvicorn_server

    parser = argparse.ArgumentParser(
        prog="python -m mcpservers.demo_auth_server",
        description="Serve a demo OAuth 2 authorization server and the demo MCP tools behind its tokens (at /mcp).",
    )
    parser.add_argument("--host", default=DEFAULT_HOST, help=f"address to listen on (default {DEFAULT_HOST})")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port to listen on (default {DEFAULT_PORT})")
    args = parser.parse_args(argv)
    base_url = f"http://{args.host}:{args.port}"
    _server, app = build_demo(base_url)
    print(
        f"demo authorization server: {base_url} (client {DEMO_CLIENT_ID}); OAuth demo MCP: {base_url}{MCP_PATH}",
        flush=True,
    )
    return serve(uvicorn_server(app, args.host, args.port))


if __name__ == "__main__":
    sys.exit(main())
