from __future__ import annotations

from datetime import timedelta

from django.test import Client
from django.urls import reverse
from django.utils import timezone

from organizations import services
from organizations.models import ApiToken, AuditEvent, hash_token


def test_it_shows_a_new_token_once_and_stores_only_its_hash(world, client_for):
    client = client_for("member")
    response = client.post(reverse("api-tokens"), {"name": "deploy", "expires_in_days": "30"})
    assert response.status_code == 200
    token = ApiToken.objects.get(user=world.member)
    page = response.content.decode()
    start = page.index('id="new-token"')
    shown = page[page.index(">", start) + 1 : page.index("</code>", start)]
    assert hash_token(shown) == token.token_hash and shown not in token.token_hash
    assert response["Cache-Control"] == "no-store"
    assert token.expires_at is not None and token.expires_at > timezone.now() + timedelta(days=29)
    # Shown once: the list page no longer carries it.
    assert shown not in client.get(reverse("api-tokens")).content.decode()
    # The audit record has no token text.
    event = AuditEvent.objects.get(action="api_token.create")
    assert shown not in str(event.as_record())


def test_it_answers_an_htmx_create_with_the_panel_only(world, client_for):
    response = client_for("member").post(reverse("api-tokens"), {"name": "ci"}, headers={"HX-Request": "true"})
    body = response.content.decode()
    assert response.status_code == 200
    assert body.lstrip().startswith('<div id="token-panel">') and "<html" not in body


def test_it_refuses_a_token_without_a_name(world, client_for):
    response = client_for("member").post(reverse("api-tokens"), {"name": ""})
    assert response.status_code == 400
    assert not ApiToken.objects.exists()


def test_a_token_authenticates_api_calls(world):
    _, plaintext = services.api_token_create(user=world.auditor, name="script")
    response = Client().get("/api/v2/users/me", headers={"Authorization": f"Bearer {plaintext}"})
    assert response.status_code == 200
    assert response.json()["username"] == "audrey"
    assert ApiToken.objects.get(user=world.auditor).last_used_at is not None


def test_a_token_does_not_sign_in_pages(world):
    _, plaintext = services.api_token_create(user=world.auditor, name="script")
    response = Client().get(reverse("members") + "?org=acme", headers={"Authorization": f"Bearer {plaintext}"})
    assert response.status_code == 302


def test_revoked_expired_and_made_up_tokens_are_refused(world):
    token, revoked = services.api_token_create(user=world.member, name="old")
    services.api_token_revoke(actor=world.member, token=token)
    expired_token, expired = services.api_token_create(
        user=world.member, name="short", expires_at=timezone.now() + timedelta(seconds=30)
    )
    ApiToken.objects.filter(pk=expired_token.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    for plaintext in (revoked, expired, "sb_made-up", "not-even-ours"):
        response = Client().get("/api/v2/users/me", headers={"Authorization": f"Bearer {plaintext}"})
        assert response.status_code == 401
        assert response.json()["message"].startswith("You are not signed in")


def test_it_revokes_after_confirmation(world, client_for):
    token, _ = services.api_token_create(user=world.member, name="old")
    client = client_for("member")
    confirm = client.get(reverse("api-token-revoke", args=[token.pk]))
    assert confirm.status_code == 200 and "Revoke the token old?" in confirm.content.decode()
    token.refresh_from_db()
    assert token.revoked_at is None
    assert client.post(reverse("api-token-revoke", args=[token.pk])).status_code == 302
    token.refresh_from_db()
    assert token.revoked_at is not None


def test_another_users_token_is_not_found(world, client_for):
    token, _ = services.api_token_create(user=world.member, name="mine")
    for persona in ("org_admin", "site_owner"):
        assert client_for(persona).post(reverse("api-token-revoke", args=[token.pk])).status_code == 404
    token.refresh_from_db()
    assert token.revoked_at is None


def test_create_api_token_command_prints_a_working_token(world):
    from io import StringIO

    from django.core.management import call_command

    out = StringIO()
    call_command("create_api_token", "bob", stdout=out)
    plaintext = out.getvalue().strip()
    response = Client().get("/api/v2/users/me", headers={"Authorization": f"Bearer {plaintext}"})
    assert response.json()["username"] == "bob"


def test_the_token_list_runs_a_fixed_number_of_queries(world, client_for, django_assert_max_num_queries):
    client = client_for("member")
    client.get(reverse("api-tokens"))
    for i in range(3):
        services.api_token_create(user=world.member, name=f"t{i}")
    with django_assert_max_num_queries(6) as few:
        client.get(reverse("api-tokens"))
    for i in range(20):
        services.api_token_create(user=world.member, name=f"u{i}")
    with django_assert_max_num_queries(len(few.captured_queries)):
        client.get(reverse("api-tokens"))
