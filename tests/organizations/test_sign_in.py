from __future__ import annotations

from django.test import Client, override_settings
from django.urls import reverse

from organizations.models import AuditEvent

from ..conftest import PASSWORD


def sign_in(client: Client, username: str, password: str = PASSWORD, **extra):
    return client.post(reverse("login"), {"username": username, "password": password, **extra})


def test_it_signs_in_with_a_username(world):
    client = Client()
    response = sign_in(client, "bob")
    assert response.status_code == 302 and response["Location"] == reverse("home")
    assert client.get(reverse("agents")).status_code == 200
    assert AuditEvent.objects.filter(action="auth.sign_in", actor=world.member).exists()


def test_it_signs_in_with_an_email_address_in_any_case(world):
    response = sign_in(Client(), "BOB@example.test")
    assert response.status_code == 302


def test_it_refuses_a_wrong_password_with_a_clear_message_and_audits_it(world):
    response = sign_in(Client(), "bob", "wrong")
    assert response.status_code == 400
    assert "do not match an account" in response.content.decode()
    event = AuditEvent.objects.get(action="auth.sign_in_failed")
    assert event.outcome == "denied" and event.resource_name == "bob" and event.actor is None


def test_it_follows_only_local_next_urls(world):
    response = sign_in(Client(), "bob", next="/ai/settings/audit-log")
    assert response["Location"] == "/ai/settings/audit-log"
    response = sign_in(Client(), "bob", next="https://evil.example/")
    assert response["Location"] == reverse("home")


@override_settings(LOGIN_FAILURE_LIMIT=3)
def test_it_locks_out_after_repeated_failures_even_with_the_right_password(world):
    client = Client()
    for _ in range(3):
        assert sign_in(client, "bob", "wrong").status_code == 400
    response = sign_in(client, "bob")
    assert response.status_code == 429
    assert "Too many failed sign-in attempts" in response.content.decode()
    assert "_auth_user_id" not in client.session


@override_settings(LOGIN_FAILURE_LIMIT=3)
def test_it_limits_failures_per_address_across_usernames(world):
    client = Client(REMOTE_ADDR="203.0.113.9")
    for name in ("x1", "x2", "x3"):
        sign_in(client, name, "wrong")
    assert sign_in(client, "bob").status_code == 429
    # Another address is not affected.
    assert sign_in(Client(REMOTE_ADDR="203.0.113.10"), "alice").status_code == 302


def test_it_refuses_inactive_accounts(world):
    world.member.is_active = False
    world.member.save()
    assert sign_in(Client(), "bob").status_code == 400


def test_it_signs_out_only_by_post(world, client_for):
    client = client_for("member")
    assert client.get(reverse("logout")).status_code == 405
    response = client.post(reverse("logout"))
    assert response.status_code == 302
    assert client.get(reverse("agents")).status_code == 302
