"""The OAuth 2 / OpenID Connect authorization server of the tests: ``mcpservers/demo_auth_server.py`` (built with
authlib's server core; the same server backs the OAuth demo MCP server of ``make run``) on ephemeral loopback ports,
plus what tests need around it: the ``oauth_server`` fixture, helpers that play the browser, and
``protected_mcp_server()`` which puts the test MCP server of ``tests/peers/mcp_servers.py`` behind its tokens.

Read ``mcpservers/demo_auth_server.py``'s docstring for the endpoints and switches. Tests use it without the consent
page: ``/authorize`` approves at once for ``logged_in_user`` ("alice" unless told otherwise).

    from tests.peers.oauth_server import oauth_server_fixture  # noqa: F401  (registers ``oauth_server``)

    def test_x(oauth_server):
        server = oauth_server(access_token_lifetime=2, revocation_mode="unsupported_refresh")
        client = server.add_client("switchboard", secret="s3cret", redirect_uris=["http://testserver/cb"])
        ...  # point the app at server.issuer (discovery) or server.authorization_endpoint / server.token_endpoint
        assert server.token_calls["refresh_token"] == 1
        assert [r.token_type_hint for r in server.revocations] == ["refresh_token", "access_token"]
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
import requests
import uvicorn

from mcpservers.demo_auth_server import (  # noqa: F401  (re-exported for the tests)
    REVOCATION_BODY_SENTINEL,
    REVOCATION_MODES,
    TOKEN_BODY_SENTINEL,
    AuthServer,
    BearerGate,
    Client,
    Token,
    User,
    protected_resource_metadata,
)


def pkce_pair(verifier: str | None = None) -> tuple[str, str]:
    """A PKCE (code_verifier, S256 code_challenge) pair, for tests that play the client."""
    verifier = verifier or secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


class OAuthPeer(AuthServer):
    """The authorization server with the helpers of tests that play the browser or need a protected resource."""

    def approve(self, authorize_url: str) -> str:
        """GET an authorization URL (as a browser would, without following the answer) and return the ``Location``
        it redirects to: the client's callback with ``code``/``state`` or ``error``. Raises on a non-redirect."""
        response = requests.get(authorize_url, allow_redirects=False, timeout=10)
        if response.status_code != 302:
            raise AssertionError(f"/authorize answered {response.status_code}: {response.text[:500]}")
        return response.headers["location"]

    def authorize_url(self, client_id: str, redirect_uri: str, *, challenge: str, state: str = "st", **params) -> str:
        query = {
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": redirect_uri,
            "state": state,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            **params,
        }
        return self.authorization_endpoint + "?" + urlencode(query)

    def protected_mcp_server(
        self,
        transport: str = "streamable_http",
        *,
        scopes: list[str] | None = None,
        resource_metadata: str | None = "both",
    ):
        """Start the test MCP server of ``tests/peers/mcp_servers.py`` behind a ``BearerGate`` that requires this
        server's access tokens. Returns its ``MCPPeer`` (``.url``, ``.requests`` — 401-refused requests included —
        and ``.gate``). It is stopped with this server."""
        from tests.peers.mcp_servers import TRANSPORTS, MCPPeer, RecordingASGI, build_mcp

        if transport not in TRANSPORTS:
            raise ValueError(f"unknown transport {transport!r}")
        peer = MCPPeer(transport=transport)
        mcp = build_mcp()
        app = mcp.streamable_http_app() if transport == "streamable_http" else mcp.sse_app()
        resource_path = "/mcp" if transport == "streamable_http" else "/sse"
        gate = BearerGate(app, self, resource_path=resource_path, scopes=scopes, resource_metadata=resource_metadata)
        peer.gate = gate
        sock, peer.base_url = _bind()
        self._stops.append(_serve(RecordingASGI(gate, peer), sock, lifespan="on", name="protected-mcp-peer"))
        return peer


def _bind() -> tuple[socket.socket, str]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    return sock, f"http://127.0.0.1:{sock.getsockname()[1]}"


def _serve(app: Callable, sock: socket.socket, *, lifespan: str = "off", name: str = "oauth-peer") -> Callable:
    """Run an ASGI app with uvicorn on a bound socket in a thread. Returns the function that stops it."""
    config = uvicorn.Config(
        app, log_level="warning", access_log=False, lifespan=lifespan, timeout_graceful_shutdown=1, ws="none"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True, name=name)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError(f"the {name} test server did not start")
        time.sleep(0.01)

    def stop() -> None:
        server.should_exit = True
        thread.join(timeout=4)
        if thread.is_alive():
            server.force_exit = True
            thread.join(timeout=2)
        sock.close()

    return stop


def start(**options: Any) -> tuple[OAuthPeer, Callable[[], None]]:
    """Start an authorization server on an ephemeral loopback port. Returns it and the function that stops it (and
    anything started through it, such as ``protected_mcp_server``)."""
    peer = OAuthPeer(**options)
    sock, peer.base_url = _bind()
    peer._stops.append(_serve(peer, sock, name="oauth-peer"))
    return peer, peer.stop


@pytest.fixture(name="oauth_server")
def oauth_server_fixture() -> Iterator[Callable[..., OAuthPeer]]:
    """The ``oauth_server`` fixture: a factory ``oauth_server(**options) -> OAuthPeer`` (options: the attributes of
    ``OAuthPeer`` above the line ``base_url``). Every server started is stopped after the test. Import
    ``oauth_server_fixture`` into a test module (registered under the name ``oauth_server``)."""
    stops: list[Callable[[], None]] = []

    def make(**options: Any) -> OAuthPeer:
        peer, stop = start(**options)
        stops.append(stop)
        return peer

    try:
        yield make
    finally:
        for stop in reversed(stops):
            stop()


def callback_params(location: str) -> dict[str, str]:
    """The query parameters of a redirect ``Location`` (``code``, ``state``, ``error``…)."""
    return {key: values[-1] for key, values in parse_qs(urlsplit(location).query).items()}
