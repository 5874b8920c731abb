"""Self-tests of the loopback OAuth 2 / OIDC authorization server peer (``tests/peers/oauth_server.py``).

A plain ``requests`` client plays the OAuth client and the browser, so these tests say what the peer does on the
wire before other tests rely on it.
"""

from __future__ import annotations

import threading
import time
import warnings

import pytest
import requests
from authlib.oidc.core import CodeIDToken
from joserfc import jwt
from joserfc.jwk import KeySet

from tests.peers.oauth_server import (
    REVOCATION_BODY_SENTINEL,
    TOKEN_BODY_SENTINEL,
    callback_params,
    oauth_server_fixture,  # noqa: F401  (registers ``oauth_server``)
    pkce_pair,
)

REDIRECT = "http://testserver/api/experimental/mcp/servers/abc/oauth2/callback"


def authorize(server, client_id, *, challenge, state="st-1", redirect_uri=REDIRECT, **params):
    """Run /authorize as a browser would; the callback's query parameters."""
    location = server.approve(server.authorize_url(client_id, redirect_uri, challenge=challenge, state=state, **params))
    assert location.startswith(redirect_uri)
    return callback_params(location)


def token_request(server, data, *, client=None, auth="basic"):
    """POST to /token. ``auth``: "basic" (HTTP Basic), "post" (secret in the body) or "none" (client_id alone)."""
    data = dict(data)
    kwargs = {}
    if auth == "basic":
        kwargs["auth"] = (client.client_id, client.client_secret)
    elif auth == "post":
        data.update(client_id=client.client_id, client_secret=client.client_secret)
    elif auth == "none":
        data["client_id"] = client.client_id
    return requests.post(server.token_endpoint, data=data, timeout=10, **kwargs)


def code_flow(server, client, *, auth="basic", scope=None, **params):
    """The whole authorization-code + PKCE flow; the token response JSON."""
    verifier, challenge = pkce_pair()
    if scope:
        params["scope"] = scope
    callback = authorize(server, client.client_id, challenge=challenge, **params)
    response = token_request(
        server,
        code_grant(callback["code"], verifier),
        client=client,
        auth=auth,
    )
    assert response.status_code == 200, response.text
    return response.json()


def code_grant(code, verifier):
    return {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT, "code_verifier": verifier}


def refresh(server, client, refresh_token, *, auth="basic"):
    return token_request(
        server, {"grant_type": "refresh_token", "refresh_token": refresh_token}, client=client, auth=auth
    )


def revoke(server, client, token, hint=None, *, auth="basic", allow_redirects=False):
    data = {"token": token}
    if hint:
        data["token_type_hint"] = hint
    kwargs = {}
    if auth == "basic":
        kwargs["auth"] = (client.client_id, client.client_secret)
    else:
        data["client_id"] = client.client_id
    return requests.post(server.revocation_endpoint, data=data, allow_redirects=allow_redirects, timeout=10, **kwargs)


# -- metadata ---------------------------------------------------------------------------------------------------------


def test_it_serves_rfc8414_and_openid_metadata(oauth_server):
    server = oauth_server()
    oauth = requests.get(server.url("/.well-known/oauth-authorization-server"), timeout=10)
    openid = requests.get(server.url("/.well-known/openid-configuration"), timeout=10)
    assert oauth.status_code == openid.status_code == 200
    document = oauth.json()
    assert document == openid.json() == server.metadata()
    assert document["issuer"] == server.issuer == server.base_url
    assert document["authorization_endpoint"] == server.url("/authorize")
    assert document["token_endpoint"] == server.url("/token")
    assert document["revocation_endpoint"] == server.url("/revoke")
    assert document["registration_endpoint"] == server.url("/register")
    assert document["jwks_uri"] == server.url("/jwks")
    assert document["code_challenge_methods_supported"] == ["S256"]
    methods = {"client_secret_basic", "client_secret_post", "none"}
    assert set(document["token_endpoint_auth_methods_supported"]) == methods


def test_it_serves_path_aware_metadata_for_an_issuer_path(oauth_server):
    server = oauth_server(issuer_path="/tenants/acme")
    assert server.issuer == server.url("/tenants/acme")
    for path in (
        "/.well-known/oauth-authorization-server/tenants/acme",  # RFC 8414 path-aware
        "/.well-known/oauth-authorization-server",  # root
        "/tenants/acme/.well-known/openid-configuration",  # OpenID discovery (appended)
        "/.well-known/openid-configuration/tenants/acme",  # RFC 8414 §5 compatibility form
    ):
        response = requests.get(server.url(path), timeout=10)
        assert response.status_code == 200, path
        assert response.json()["issuer"] == server.issuer
    assert server.metadata()["token_endpoint"] == server.url("/tenants/acme/token")
    assert server.metadata_url == server.url("/.well-known/oauth-authorization-server/tenants/acme")


def test_it_switches_metadata_documents_off(oauth_server):
    server = oauth_server(issuer_path="/t", oauth_metadata_path_aware=False, oauth_metadata=False)
    assert requests.get(server.url("/.well-known/oauth-authorization-server/t"), timeout=10).status_code == 404
    assert requests.get(server.url("/.well-known/oauth-authorization-server"), timeout=10).status_code == 404
    assert requests.get(server.openid_configuration_url, timeout=10).status_code == 200

    server.openid_configuration = False  # switched while running
    assert requests.get(server.openid_configuration_url, timeout=10).status_code == 404
    server.oauth_metadata = True
    assert requests.get(server.url("/.well-known/oauth-authorization-server"), timeout=10).status_code == 200
    assert server.paths()[0] == "/.well-known/oauth-authorization-server/t"


def test_it_can_remove_or_pad_metadata_fields(oauth_server):
    server = oauth_server(revocation=False, metadata_extra={"jwks_uri": None, "x-padding": "x" * 10})
    document = requests.get(server.metadata_url, timeout=10).json()
    assert "revocation_endpoint" not in document and "jwks_uri" not in document
    assert document["x-padding"] == "x" * 10
    assert requests.post(server.url("/revoke"), data={"token": "t"}, timeout=10).status_code == 404


# -- registration -----------------------------------------------------------------------------------------------------


def test_it_registers_public_and_confidential_clients(oauth_server):
    server = oauth_server()
    public = requests.post(
        server.registration_endpoint,
        json={"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none", "client_name": "Switchboard"},
        timeout=10,
    )
    assert public.status_code == 201, public.text
    assert public.json()["client_id"] and "client_secret" not in public.json()
    confidential = requests.post(server.registration_endpoint, json={"redirect_uris": [REDIRECT]}, timeout=10)
    assert confidential.status_code == 201
    body = confidential.json()
    assert body["client_secret"] and body["token_endpoint_auth_method"] == "client_secret_basic"
    assert [r.body["redirect_uris"] for r in server.registrations] == [[REDIRECT], [REDIRECT]]

    client = server.clients[public.json()["client_id"]]
    assert client.registered and client.public
    tokens = code_flow(server, client, auth="none")
    assert tokens["access_token"] and tokens["refresh_token"]


def test_it_refuses_registration_when_switched_off(oauth_server):
    server = oauth_server(registration=False)
    assert "registration_endpoint" not in server.metadata()
    response = requests.post(server.registration_endpoint, json={"redirect_uris": [REDIRECT]}, timeout=10)
    assert response.status_code == 404


def test_it_refuses_invalid_registration_metadata(oauth_server):
    server = oauth_server()
    response = requests.post(
        server.registration_endpoint,
        json={"redirect_uris": [REDIRECT], "grant_types": ["client_credentials"]},
        timeout=10,
    )
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_client_metadata"


# -- authorization code + PKCE ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("auth", ["basic", "post", "none"])
def test_it_runs_the_code_flow_with_pkce(oauth_server, auth):
    server = oauth_server()
    if auth == "none":
        client = server.add_client("sb-public", redirect_uris=[REDIRECT], public=True)
    else:
        client = server.add_client("sb", secret="s3cret", redirect_uris=[REDIRECT])
    verifier, challenge = pkce_pair()
    callback = authorize(server, client.client_id, challenge=challenge, state="xyz", scope="read write")
    assert callback["state"] == "xyz" and callback["code"]
    assert server.authorize_requests[0].params["code_challenge_method"] == "S256"

    response = token_request(
        server,
        code_grant(callback["code"], verifier),
        client=client,
        auth=auth,
    )
    assert response.status_code == 200, response.text
    tokens = response.json()
    assert tokens["token_type"] == "Bearer" and tokens["expires_in"] == 3600 and tokens["scope"] == "read write"
    assert tokens["refresh_token"].startswith("rt_") and tokens["access_token"].startswith("at_")
    assert server.token_calls == {"authorization_code": 1}
    record = server.token_requests[0]
    assert record.client_auth == {"basic": "client_secret_basic", "post": "client_secret_post", "none": "none"}[auth]
    assert record.client_id == client.client_id and record.status == 200
    assert server.validate_bearer(tokens["access_token"]).username == "alice"


def test_it_requires_s256_pkce(oauth_server):
    server = oauth_server()
    client = server.add_client("sb", redirect_uris=[REDIRECT])
    query = f"response_type=code&client_id=sb&redirect_uri={REDIRECT}&state=s"
    missing = callback_params(server.approve(f"{server.authorization_endpoint}?{query}"))
    assert missing["error"] == "invalid_request" and missing["state"] == "s"
    plain = callback_params(
        server.approve(f"{server.authorization_endpoint}?{query}&code_challenge={'a' * 43}&code_challenge_method=plain")
    )
    assert plain["error"] == "invalid_request"
    assert not server.codes and client.client_id == "sb"


def test_it_refuses_a_wrong_verifier(oauth_server):
    server = oauth_server()
    client = server.add_client("sb", secret="s3cret", redirect_uris=[REDIRECT])
    _, challenge = pkce_pair()
    callback = authorize(server, "sb", challenge=challenge)
    data = {"grant_type": "authorization_code", "code": callback["code"], "redirect_uri": REDIRECT}
    wrong = token_request(server, {**data, "code_verifier": pkce_pair()[0]}, client=client)
    assert wrong.status_code == 400 and wrong.json()["error"] == "invalid_grant"
    missing = token_request(server, data, client=client)
    assert missing.status_code == 400 and missing.json()["error"] == "invalid_request"
    assert not server.tokens


def test_it_refuses_a_replayed_code_and_revokes_what_it_gave(oauth_server):
    server = oauth_server()
    client = server.add_client("sb", secret="s3cret", redirect_uris=[REDIRECT])
    verifier, challenge = pkce_pair()
    callback = authorize(server, "sb", challenge=challenge)
    data = code_grant(callback["code"], verifier)
    first = token_request(server, data, client=client)
    assert first.status_code == 200
    replay = token_request(server, data, client=client)
    assert replay.status_code == 400 and replay.json()["error"] == "invalid_grant"
    assert server.code_replays == 1
    assert server.validate_bearer(first.json()["access_token"]) is None


def test_it_denies_or_requires_login_when_configured(oauth_server):
    server = oauth_server(deny=True)
    server.add_client("sb", redirect_uris=[REDIRECT])
    _, challenge = pkce_pair()
    assert authorize(server, "sb", challenge=challenge, state="s1") == {"error": "access_denied", "state": "s1"}
    server.deny = "temporarily_unavailable"
    assert authorize(server, "sb", challenge=challenge)["error"] == "temporarily_unavailable"
    server.deny, server.logged_in_user = False, None
    assert authorize(server, "sb", challenge=challenge)["error"] == "login_required"


def test_it_refuses_an_unknown_client_or_redirect_uri_without_redirecting(oauth_server):
    server = oauth_server()
    server.add_client("sb", redirect_uris=[REDIRECT])
    _, challenge = pkce_pair()
    for client_id, redirect_uri in (("nobody", REDIRECT), ("sb", "http://evil.test/cb")):
        url = server.authorize_url(client_id, redirect_uri, challenge=challenge)
        response = requests.get(url, allow_redirects=False, timeout=10)
        assert response.status_code == 400 and "location" not in response.headers


def test_it_refuses_a_bad_client_secret(oauth_server):
    server = oauth_server()
    server.add_client("sb", secret="s3cret", redirect_uris=[REDIRECT])
    data = {"grant_type": "authorization_code", "code": "x"}
    basic = requests.post(server.token_endpoint, data=data, auth=("sb", "wrong"), timeout=10)
    assert basic.status_code == 401 and basic.json()["error"] == "invalid_client"
    post = requests.post(server.token_endpoint, data={**data, "client_id": "sb", "client_secret": "wrong"}, timeout=10)
    assert post.status_code == 401 and post.json()["error"] == "invalid_client"
    alone = requests.post(server.token_endpoint, data={**data, "client_id": "sb"}, timeout=10)  # confidential client
    assert alone.status_code == 401 and alone.json()["error"] == "invalid_client"


# -- refresh ----------------------------------------------------------------------------------------------------------


def test_it_rotates_refresh_tokens(oauth_server):
    server = oauth_server()
    client = server.add_client("sb", secret="s3cret", redirect_uris=[REDIRECT])
    first = code_flow(server, client)
    response = refresh(server, client, first["refresh_token"])
    assert response.status_code == 200, response.text
    second = response.json()
    assert second["refresh_token"] != first["refresh_token"] and second["access_token"] != first["access_token"]
    assert server.token_calls["refresh_token"] == 1
    assert server.token(first["refresh_token"]).refresh_rotated
    assert server.validate_bearer(second["access_token"]) is not None
    assert [t.grant_type for t in server.family(second["access_token"])] == ["authorization_code", "refresh_token"]


def test_it_kills_the_family_on_refresh_token_reuse(oauth_server):
    server = oauth_server()
    client = server.add_client("sb", redirect_uris=[REDIRECT], public=True)
    first = code_flow(server, client, auth="none")
    second = refresh(server, client, first["refresh_token"], auth="none").json()
    reuse = refresh(server, client, first["refresh_token"], auth="none")
    assert reuse.status_code == 400 and reuse.json()["error"] == "invalid_grant"
    assert server.reuse_detections == 1
    assert server.validate_bearer(second["access_token"]) is None
    assert server.validate_bearer(first["access_token"]) is None
    after = refresh(server, client, second["refresh_token"], auth="none")
    assert after.status_code == 400 and after.json()["error"] == "invalid_grant"
    assert {t.revoked_reason for t in server.family(first["access_token"])} == {"reuse"}


def test_it_burns_the_family_when_two_refreshes_overlap(oauth_server):
    server = oauth_server(token_delay=0.2)
    client = server.add_client("sb", secret="s3cret", redirect_uris=[REDIRECT])
    tokens = code_flow(server, client)
    answers = []
    threads = [
        threading.Thread(target=lambda: answers.append(refresh(server, client, tokens["refresh_token"])))
        for _ in range(2)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(a.status_code for a in answers) == [200, 400]
    assert server.token_calls["refresh_token"] == 2 and server.reuse_detections == 1
    winner = next(a.json() for a in answers if a.status_code == 200)
    assert server.validate_bearer(winner["access_token"]) is None  # burned with the family


def test_it_can_keep_refresh_tokens_without_rotation(oauth_server):
    server = oauth_server(rotate_refresh_tokens=False)
    client = server.add_client("sb", secret="s3cret", redirect_uris=[REDIRECT])
    tokens = code_flow(server, client)
    for _ in range(2):
        response = refresh(server, client, tokens["refresh_token"])
        assert response.status_code == 200 and "refresh_token" not in response.json()


def test_it_expires_access_tokens_after_the_configured_lifetime(oauth_server):
    server = oauth_server(access_token_lifetime=1)
    client = server.add_client("sb", secret="s3cret", redirect_uris=[REDIRECT])
    tokens = code_flow(server, client)
    assert tokens["expires_in"] == 1
    assert server.validate_bearer(tokens["access_token"]) is not None
    time.sleep(1.05)
    assert server.validate_bearer(tokens["access_token"]) is None
    fresh = refresh(server, client, tokens["refresh_token"]).json()
    assert server.validate_bearer(fresh["access_token"]) is not None
    server.expire_access_tokens()  # without sleeping
    assert server.validate_bearer(fresh["access_token"]) is None


def test_it_can_fail_the_token_endpoint(oauth_server):
    server = oauth_server(token_endpoint_status=500)
    client = server.add_client("sb", secret="s3cret", redirect_uris=[REDIRECT])
    response = refresh(server, client, "rt_whatever")
    assert response.status_code == 500 and TOKEN_BODY_SENTINEL in response.text
    assert server.token_calls == {"refresh_token": 1}


# -- revocation -------------------------------------------------------------------------------------------------------


def test_it_revokes_a_refresh_token_and_its_family(oauth_server):
    server = oauth_server()
    client = server.add_client("sb", secret="s3cret", redirect_uris=[REDIRECT])
    tokens = code_flow(server, client)
    response = revoke(server, client, tokens["refresh_token"], "refresh_token")
    assert response.status_code == 200
    (record,) = server.revocations
    assert (record.client_auth, record.client_id, record.token_kind, record.revoked) == (
        "client_secret_basic",
        "sb",
        "refresh_token",
        True,
    )
    assert record.token == tokens["refresh_token"] and record.token_type_hint == "refresh_token"
    assert server.validate_bearer(tokens["access_token"]) is None
    assert refresh(server, client, tokens["refresh_token"]).status_code == 400


def test_it_records_a_public_client_revoking_with_client_id_in_the_body(oauth_server):
    server = oauth_server(revocation_mode="no_content")
    client = server.add_client("sb-public", redirect_uris=[REDIRECT], public=True)
    tokens = code_flow(server, client, auth="none")
    response = revoke(server, client, tokens["access_token"], "access_token", auth="none")
    assert response.status_code == 204 and response.content == b""
    record = server.revocations[0]
    assert record.client_auth == "none" and record.client_id == "sb-public" and record.revoked
    assert server.validate_bearer(tokens["access_token"]) is None
    assert server.token(tokens["refresh_token"]).refresh_active  # revoking an access token leaves the refresh token


def test_it_answers_202_without_revoking(oauth_server):
    server = oauth_server(revocation_mode="accepted")
    client = server.add_client("sb", secret="s3cret", redirect_uris=[REDIRECT])
    tokens = code_flow(server, client)
    assert revoke(server, client, tokens["refresh_token"], "refresh_token").status_code == 202
    assert server.validate_bearer(tokens["access_token"]) is not None
    assert not server.revocations[0].revoked


def test_it_refuses_refresh_token_revocation_so_the_client_falls_back(oauth_server):
    server = oauth_server(revocation_mode="unsupported_refresh")
    client = server.add_client("sb", secret="s3cret", redirect_uris=[REDIRECT])
    tokens = code_flow(server, client)
    first = revoke(server, client, tokens["refresh_token"], "refresh_token")
    assert first.status_code == 400 and first.json()["error"] == "unsupported_token_type"
    fallback = revoke(server, client, tokens["access_token"], "access_token")
    assert fallback.status_code == 200
    attempts = [(r.token_type_hint, r.status) for r in server.revocations]
    assert attempts == [("refresh_token", 400), ("access_token", 200)]
    assert server.validate_bearer(tokens["access_token"]) is None


def test_it_redirects_revocation_to_another_origin(oauth_server):
    server = oauth_server(revocation_mode="redirect_cross_origin")
    client = server.add_client("sb", secret="s3cret", redirect_uris=[REDIRECT])
    tokens = code_flow(server, client)
    response = revoke(server, client, tokens["refresh_token"], "refresh_token")
    assert response.status_code == 307
    assert response.headers["location"] == f"http://localhost:{server.port}/revoke/redirected"
    assert [r.redirected for r in server.revocations] == [False]  # the target was not reached
    assert server.validate_bearer(tokens["access_token"]) is not None

    followed = revoke(server, client, tokens["refresh_token"], "refresh_token", allow_redirects=True)
    assert followed.status_code == 401  # requests drops the Basic credentials on a cross-host redirect
    hit = server.revocations[-1]
    assert hit.redirected and hit.host == f"localhost:{server.port}" and hit.client_auth is None


def test_it_redirects_revocation_on_the_same_origin(oauth_server):
    server = oauth_server(revocation_mode="redirect_same_origin")
    client = server.add_client("sb", secret="s3cret", redirect_uris=[REDIRECT])
    tokens = code_flow(server, client)
    followed = revoke(server, client, tokens["refresh_token"], "refresh_token", allow_redirects=True)
    assert followed.status_code == 200
    assert [(r.mode, r.revoked) for r in server.revocations] == [("redirect_same_origin", False), ("redirected", True)]
    assert server.validate_bearer(tokens["access_token"]) is None


def test_it_can_fail_revocation_with_a_body_that_must_not_leak(oauth_server):
    server = oauth_server(revocation_mode="error")
    client = server.add_client("sb", secret="s3cret", redirect_uris=[REDIRECT])
    response = revoke(server, client, "at_x", "access_token")
    assert response.status_code == 503 and REVOCATION_BODY_SENTINEL in response.text


# -- resource servers -------------------------------------------------------------------------------------------------


def test_it_validates_bearer_tokens_for_resource_servers(oauth_server):
    server = oauth_server()
    client = server.add_client("sb", secret="s3cret", redirect_uris=[REDIRECT])
    tokens = code_flow(server, client, scope="mcp:tools")
    record = server.validate_bearer("Bearer " + tokens["access_token"])
    assert (record.client_id, record.username, record.scope) == ("sb", "alice", "mcp:tools")
    assert server.validate_bearer(tokens["access_token"], scopes=["mcp:tools"]) is record
    assert server.validate_bearer(tokens["access_token"], scopes=["admin"]) is None
    assert server.validate_bearer("Basic " + tokens["access_token"]) is None
    assert server.validate_bearer(tokens["refresh_token"]) is None
    assert server.validate_bearer("at_unknown") is None and server.validate_bearer(None) is None
    minted = server.mint_tokens("sb", "bob", "mcp:tools")
    assert server.validate_bearer(minted["access_token"]).username == "bob"
    assert server.protected_resource_metadata("http://r.test/mcp") == {
        "resource": "http://r.test/mcp",
        "authorization_servers": [server.issuer],
        "bearer_methods_supported": ["header"],
    }


def test_it_gates_an_mcp_server_with_its_tokens(oauth_server):
    server = oauth_server()
    client = server.add_client("sb", secret="s3cret", redirect_uris=[REDIRECT])
    mcp = server.protected_mcp_server()
    prm = requests.get(mcp.base_url + "/.well-known/oauth-protected-resource/mcp", timeout=10)
    assert prm.json() == server.protected_resource_metadata(mcp.url)

    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    headers = {"Accept": "application/json, text/event-stream"}
    refused = requests.post(mcp.url, json=initialize, headers=headers, timeout=10)
    assert refused.status_code == 401
    challenge = refused.headers["www-authenticate"]
    assert challenge == f'Bearer resource_metadata="{mcp.base_url}/.well-known/oauth-protected-resource/mcp"'

    tokens = code_flow(server, client)
    bearer = {**headers, "Authorization": "Bearer " + tokens["access_token"]}
    accepted = requests.post(mcp.url, json=initialize, headers=bearer, timeout=10)
    assert accepted.status_code == 200, accepted.text
    assert mcp.gate.checks[-1][1].client_id == "sb"
    server.expire_access_tokens()
    expired = requests.post(mcp.url, json=initialize, headers=bearer, timeout=10)
    assert expired.status_code == 401 and 'error="invalid_token"' in expired.headers["www-authenticate"]


# -- OpenID Connect ---------------------------------------------------------------------------------------------------


def test_it_issues_an_id_token_verifiable_with_its_jwks(oauth_server):
    server = oauth_server(logged_in_user="carol")
    client = server.add_client("sb", secret="s3cret", redirect_uris=[REDIRECT])
    tokens = code_flow(server, client, scope="openid email profile", nonce="n-0S6")
    jwks = requests.get(server.jwks_uri, timeout=10).json()
    assert all("d" not in key for key in jwks["keys"])

    decoded = jwt.decode(tokens["id_token"], KeySet.import_key_set(jwks), algorithms=["RS256"])
    claims = CodeIDToken(
        decoded.claims,
        decoded.header,
        {"iss": {"values": [server.issuer]}},
        {"nonce": "n-0S6", "client_id": "sb", "access_token": tokens["access_token"]},
    )
    claims.validate()  # iss, aud, exp, iat, nonce, at_hash: what authlib's client checks
    assert claims["sub"] == "sub-carol" and claims["preferred_username"] == "carol"
    assert claims["email"] == "carol@example.test" and claims["email_verified"] is True
    assert decoded.header["kid"] == jwks["keys"][0]["kid"]

    with warnings.catch_warnings():  # authlib.jose is deprecated in favour of joserfc, but still verifies it
        warnings.simplefilter("ignore")
        from authlib.jose import JsonWebKey
        from authlib.jose import jwt as authlib_jwt

        legacy = authlib_jwt.decode(tokens["id_token"], JsonWebKey.import_key_set(jwks))
        legacy.validate()
    assert legacy["aud"] == ["sb"] and legacy["iss"] == server.issuer


def test_it_answers_userinfo_for_an_openid_access_token(oauth_server):
    server = oauth_server()
    server.add_user("alice", email="alice@acme.test", name="Alice Liddell")
    client = server.add_client("sb", secret="s3cret", redirect_uris=[REDIRECT])
    tokens = code_flow(server, client, scope="openid profile email")
    response = requests.get(
        server.userinfo_endpoint, headers={"Authorization": "Bearer " + tokens["access_token"]}, timeout=10
    )
    assert response.status_code == 200, response.text
    assert response.json() == {
        "sub": "sub-alice",
        "preferred_username": "alice",
        "name": "Alice Liddell",
        "email": "alice@acme.test",
        "email_verified": True,
    }
    assert requests.get(server.userinfo_endpoint, timeout=10).status_code == 401
    plain = code_flow(server, client, scope="read")
    headers = {"Authorization": "Bearer " + plain["access_token"]}
    assert requests.get(server.userinfo_endpoint, headers=headers, timeout=10).status_code == 403
    assert "id_token" not in plain
