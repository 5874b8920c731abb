"""Signing in with an OpenID Connect provider, end to end against the real authlib OIDC peer of
``tests/peers/oauth_server.py`` (discovery, PKCE S256, nonce, RS256 id_token checked against its JWKS): who is let in
(email, then preferred_username; created only with OIDC_CREATE_USERS), who is refused and why, the button on the
sign-in page, the tokens stored encrypted, their refresh shortly before expiry, and no token in any response, audit
event or log record. Nothing of the project is mocked.
"""

from __future__ import annotations

import json
import logging
from datetime import timedelta
from html import escape
from urllib.parse import parse_qs, urlsplit

import pytest
from authlib.oauth2.rfc7636 import create_s256_code_challenge
from django.db import connection
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from organizations import oidc
from organizations.models import AuditEvent, User, UserOIDCToken
from tests.peers.oauth_server import OAuthPeer, oauth_server_fixture  # noqa: F401  (registers ``oauth_server``)

SITE = "http://testserver"
CLIENT_SECRET = "oidc-client-s3cret-that-must-never-leak"
LABEL = "Sign in with Example SSO"


@pytest.fixture(autouse=True)
def _site(settings):
    settings.SITE_URL = SITE
    settings.CELERY_TASK_ALWAYS_EAGER = True
    oidc.reset_client()
    yield
    oidc.reset_client()


def configure(settings, idp: OAuthPeer, client_id: str, **extra) -> None:
    settings.OIDC_ISSUER = idp.issuer
    settings.OIDC_CLIENT_ID = client_id
    settings.OIDC_CLIENT_SECRET = CLIENT_SECRET
    settings.OIDC_SCOPES = "openid email profile"
    settings.OIDC_BUTTON_LABEL = LABEL
    settings.OIDC_CREATE_USERS = False
    for name, value in extra.items():
        setattr(settings, name, value)
    oidc.reset_client()


@pytest.fixture
def idp(oauth_server, settings) -> OAuthPeer:
    """The identity provider (PKCE required), configured as Switchboard's OIDC issuer; ``bob`` is signed in there."""
    peer = oauth_server(require_pkce=True, logged_in_user="bob")
    client = peer.add_client("switchboard", secret=CLIENT_SECRET, redirect_uris=[SITE + "/login/oidc/callback"])
    configure(settings, peer, client.client_id)
    return peer


def local(url: str) -> str:
    parts = urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "")


def query(url: str) -> dict[str, str]:
    return {key: values[-1] for key, values in parse_qs(urlsplit(url).query).items()}


def oidc_sign_in(client: Client, idp: OAuthPeer, next_url: str = ""):
    """Play the browser: start, let the provider approve, come back to the callback. Returns the callback response."""
    start = client.get(reverse("oidc-login") + (f"?next={next_url}" if next_url else ""))
    assert start.status_code == 302, start.content
    assert start["Location"].startswith(idp.authorization_endpoint)
    return client.get(local(idp.approve(start["Location"])))


def signed_in_as(client: Client) -> User | None:
    user_id = client.session.get("_auth_user_id")
    return User.objects.get(pk=user_id) if user_id else None


def peer_secrets(idp: OAuthPeer) -> set[str]:
    values = {CLIENT_SECRET}
    for token in idp.tokens:
        values |= {token.access_token, token.refresh_token or ""}
    values |= set(idp.codes)
    for request in idp.token_requests:
        values |= {request.form.get("code_verifier", ""), request.form.get("refresh_token", "")}
        values |= {request.form.get("code", ""), (request.response or {}).get("id_token", "")}
    values.discard("")
    return values


def audit_text() -> str:
    return json.dumps([e.as_record() for e in AuditEvent.objects.all()], default=str)


def raw_columns(token: UserOIDCToken) -> tuple[str, str]:
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT access_token, refresh_token FROM {UserOIDCToken._meta.db_table} WHERE id = %s",  # noqa: S608
            [token.pk],
        )
        return cursor.fetchone()


# The sign-in page ------------------------------------------------------------------------------------------------


def test_the_sign_in_page_has_no_button_and_no_route_without_oidc(db, settings):
    settings.OIDC_ISSUER = ""
    page = Client().get(reverse("login")).content.decode()
    assert "data-oidc-sign-in" not in page and "/login/oidc/" not in page
    assert Client().get(reverse("oidc-login")).status_code == 404
    assert Client().get(reverse("oidc-callback") + "?code=x&state=y").status_code == 404


def test_the_sign_in_page_shows_the_button_when_oidc_is_configured(world, idp):
    page = Client().get(reverse("login") + "?next=/ai/settings/audit-log").content.decode()
    assert "data-oidc-sign-in" in page and LABEL in page
    assert 'href="/login/oidc/?next=/ai/settings/audit-log"' in page


# Signing in ------------------------------------------------------------------------------------------------------


def test_it_signs_in_the_user_matched_by_email_with_pkce_and_a_nonce(world, idp):
    idp.add_user("bob", email="BOB@example.test", name="Bob at the IdP")
    client = Client()

    response = oidc_sign_in(client, idp)

    assert response.status_code == 302 and response["Location"] == reverse("home")
    assert signed_in_as(client) == world.member
    assert client.get(reverse("agents")).status_code == 200
    authorize = idp.authorize_requests[-1].params
    assert authorize["code_challenge_method"] == "S256" and authorize["nonce"] and authorize["state"]
    assert set(authorize["scope"].split()) == {"openid", "email", "profile"}
    assert authorize["redirect_uri"] == SITE + "/login/oidc/callback"
    exchange = idp.token_requests[-1]
    assert exchange.grant_type == "authorization_code" and exchange.status == 200
    assert create_s256_code_challenge(exchange.form["code_verifier"]) == authorize["code_challenge"]
    event = AuditEvent.objects.get(action="auth.sign_in")
    assert (event.actor, event.outcome, event.resource_name) == (world.member, "success", "bob")


def test_it_matches_by_preferred_username_when_no_account_has_the_email(world, idp):
    idp.add_user("bob", email="robert@elsewhere.test")
    client = Client()
    assert oidc_sign_in(client, idp).status_code == 302
    assert signed_in_as(client) == world.member


def test_it_ignores_an_email_the_provider_has_not_verified(world, idp):
    idp.logged_in_user = "mallory"
    idp.add_user("mallory", email="bob@example.test")
    idp.users["mallory"].claims = lambda: {  # the provider vouches for the name only
        "sub": "sub-mallory",
        "preferred_username": "mallory",
        "email": "bob@example.test",
        "email_verified": False,
    }
    client = Client()
    response = oidc_sign_in(client, idp)
    assert response.status_code == 403 and signed_in_as(client) is None


def test_it_follows_only_local_next_urls(world, idp):
    response = oidc_sign_in(Client(), idp, next_url="/ai/settings/audit-log")
    assert response["Location"] == "/ai/settings/audit-log"
    response = oidc_sign_in(Client(), idp, next_url="https://evil.example/")
    assert response["Location"] == reverse("home")


def test_it_refuses_an_unknown_identity_and_creates_nobody(world, idp):
    idp.logged_in_user = "zed"
    idp.add_user("zed")
    client = Client()
    before = User.objects.count()

    response = oidc_sign_in(client, idp)

    assert response.status_code == 403
    assert oidc.NO_ACCOUNT in response.content.decode()
    assert signed_in_as(client) is None and User.objects.count() == before
    assert not UserOIDCToken.objects.exists()
    event = AuditEvent.objects.get(action="auth.sign_in_failed")
    assert (event.actor, event.outcome, event.resource_name) == (None, "denied", "zed@example.test")


def test_it_creates_the_account_when_allowed(world, idp, settings):
    settings.OIDC_CREATE_USERS = True
    idp.logged_in_user = "zed"
    idp.add_user("zed", email="zed@example.test", name="Zed")
    client = Client()

    response = oidc_sign_in(client, idp)

    assert response.status_code == 302
    user = signed_in_as(client)
    assert (user.username, user.email, user.first_name) == ("zed", "zed@example.test", "Zed")
    assert not user.has_usable_password()
    assert AuditEvent.objects.filter(action="user.create", resource_name="zed").exists()
    assert UserOIDCToken.objects.filter(user=user).exists()
    # Next time the same identity signs in to the same account.
    again = Client()
    oidc_sign_in(again, idp)
    assert signed_in_as(again) == user and User.objects.filter(email="zed@example.test").count() == 1


def test_it_refuses_a_deactivated_account_even_when_creation_is_allowed(world, idp, settings):
    settings.OIDC_CREATE_USERS = True
    User.objects.filter(pk=world.member.pk).update(is_active=False)
    client = Client()
    before = User.objects.count()

    response = oidc_sign_in(client, idp)

    assert response.status_code == 403 and oidc.DEACTIVATED in response.content.decode()
    assert signed_in_as(client) is None and User.objects.count() == before


def test_it_refuses_an_email_shared_by_two_accounts(world, idp, settings):
    settings.OIDC_CREATE_USERS = True
    idp.logged_in_user = "robert"
    idp.add_user("robert", email="shared@example.test")
    User.objects.filter(pk__in=[world.member.pk, world.auditor.pk]).update(email="shared@example.test")
    client = Client()
    response = oidc_sign_in(client, idp)
    assert response.status_code == 403 and oidc.AMBIGUOUS in response.content.decode()
    assert signed_in_as(client) is None


def test_it_refuses_a_replayed_or_forged_callback(world, idp):
    client = Client()
    start = client.get(reverse("oidc-login"))
    location = idp.approve(start["Location"])
    assert client.get(local(location)).status_code == 302
    client.logout()

    replay = client.get(local(location))
    assert replay.status_code == 400 and oidc.INVALID_STATE in replay.content.decode()
    forged = Client().get(reverse("oidc-callback") + "?code=abc&state=made-up")
    assert forged.status_code == 400 and signed_in_as(client) is None


def test_it_reports_a_refusal_by_the_provider(world, idp):
    idp.deny = True
    client = Client()
    response = oidc_sign_in(client, idp)
    assert response.status_code == 403 and oidc.PROVIDER_REFUSED in response.content.decode()
    assert signed_in_as(client) is None


def test_it_refuses_an_id_token_from_another_issuer(world, idp):
    idp.metadata_extra = {"issuer": "http://issuer.invalid"}  # discovery names another issuer than the token's iss
    oidc.reset_client()
    client = Client()
    response = oidc_sign_in(client, idp)
    assert response.status_code == 400 and escape(oidc.INVALID_IDENTITY) in response.content.decode()
    assert signed_in_as(client) is None and not UserOIDCToken.objects.exists()


def test_it_says_so_when_the_provider_cannot_be_reached(world, settings):
    settings.OIDC_ISSUER = "http://127.0.0.1:9"  # discard port: nothing listens
    settings.OIDC_CLIENT_ID = "switchboard"
    oidc.reset_client()
    response = Client().get(reverse("oidc-login"))
    assert response.status_code == 502 and oidc.UNREACHABLE in response.content.decode()


# Tokens ----------------------------------------------------------------------------------------------------------


def test_the_tokens_are_stored_encrypted(world, idp):
    oidc_sign_in(Client(), idp)

    stored = UserOIDCToken.objects.get(user=world.member)
    issued = idp.tokens[-1]
    assert str(stored.access_token) == issued.access_token and str(stored.refresh_token) == issued.refresh_token
    assert stored.expires_at > timezone.now() + timedelta(minutes=50)
    raw_access, raw_refresh = raw_columns(stored)
    assert issued.access_token not in raw_access and issued.refresh_token not in raw_refresh
    assert "********" in repr(stored.access_token)


def test_access_token_for_uses_a_fresh_token_without_refreshing(world, idp):
    oidc_sign_in(Client(), idp)
    idp.reset_records()
    assert oidc.access_token_for(world.member) == idp.tokens[-1].access_token
    assert idp.token_calls["refresh_token"] == 0
    assert oidc.access_token_for(world.org_admin) is None  # signed in with a password: no token


def test_access_token_for_refreshes_near_expiry(world, idp):
    oidc_sign_in(Client(), idp)
    first = idp.tokens[-1]
    UserOIDCToken.objects.filter(user=world.member).update(expires_at=timezone.now() + timedelta(seconds=30))
    idp.reset_records()

    token = oidc.access_token_for(world.member)

    assert idp.token_calls["refresh_token"] == 1
    assert idp.token_requests[-1].form["refresh_token"] == first.refresh_token
    renewed = idp.tokens[-1]
    assert token == renewed.access_token != first.access_token
    stored = UserOIDCToken.objects.get(user=world.member)
    assert str(stored.refresh_token) == renewed.refresh_token  # rotated
    assert stored.expires_at > timezone.now() + timedelta(minutes=50)
    assert oidc.access_token_for(world.member) == token and idp.token_calls["refresh_token"] == 1


def test_a_failed_refresh_forgets_the_tokens_and_is_audited(world, idp, caplog):
    oidc_sign_in(Client(), idp)
    UserOIDCToken.objects.filter(user=world.member).update(expires_at=timezone.now() - timedelta(seconds=1))
    idp.revoke_all()

    with caplog.at_level(logging.DEBUG):
        assert oidc.access_token_for(world.member) is None

    assert not UserOIDCToken.objects.filter(user=world.member).exists()
    event = AuditEvent.objects.get(action="auth.oidc_refresh_failed")
    assert (event.actor, event.outcome) == (world.member, "denied")
    assert event.changes == {"reason": {"old": None, "new": "invalid_grant"}}
    assert oidc.access_token_for(world.member) is None


def test_no_token_or_secret_leaves_in_a_response_an_audit_event_or_a_log(world, idp, settings, caplog):
    with caplog.at_level(logging.INFO):
        client = Client()
        responses = [oidc_sign_in(client, idp)]
        responses.append(client.get(reverse("agents")))
        UserOIDCToken.objects.filter(user=world.member).update(expires_at=timezone.now())
        oidc.access_token_for(world.member)
        idp.revoke_all()
        UserOIDCToken.objects.filter(user=world.member).update(expires_at=timezone.now())
        oidc.access_token_for(world.member)
        idp.logged_in_user = "zed"
        idp.add_user("zed")
        responses.append(oidc_sign_in(Client(), idp))

    leaked = peer_secrets(idp)
    assert len(leaked) > 5
    bodies = "".join(r.content.decode() + json.dumps(dict(r.headers)) for r in responses)
    logs = "\n".join(record.getMessage() for record in caplog.records)
    for value in leaked:
        assert value not in bodies
        assert value not in audit_text()
        assert value not in logs
