"""Admin settings → Providers: an OpenAI-compatible endpoint configured by site owners, its key encrypted at rest and
never shown again (not on the page, not in the audit log, not in any response), kept when the form leaves it blank,
removed by "Remove the stored key"; the page is the site owner's alone."""

from __future__ import annotations

import json

import pytest
from django.db import connection
from django.urls import reverse

from chats import services
from chats.models import Message, ProviderConfig, ToolCall, Turn
from organizations import audit
from organizations.models import AuditEvent, Outcome
from project import crypto
from tests.peers.model_server import model_server_fixture  # noqa: F401  (registers ``model_server``)

KEY = "sk-secret-123"


@pytest.fixture
def provider(world, model_server):
    return services.provider_save(
        actor=world.site_owner,
        name="scripted",
        base_url=model_server.url + "/v1",
        default_model="gpt-test",
        api_key=KEY,
    )


def raw_key(config: ProviderConfig) -> str | None:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT api_key FROM {ProviderConfig._meta.db_table} WHERE id = %s", [config.pk])
        return cursor.fetchone()[0]


def audit_text() -> str:
    return json.dumps([event.as_record() for event in AuditEvent.objects.all()], default=str)


def post_provider(client, model_server, **extra):
    data = {
        "name": "scripted",
        "display_name": "",
        "base_url": model_server.url + "/v1",
        "default_model": "gpt-test",
        "api_key": "",
        "enabled": "on",
    }
    data.update(extra)
    return client.post(reverse("providers"), data)


def test_it_encrypts_the_key_at_rest(provider):
    stored = raw_key(provider)
    assert stored and stored != KEY and KEY not in stored
    assert stored.startswith("gAAAAA")  # a Fernet token (version byte 0x80, base64url)
    assert crypto.decrypt(stored) == KEY
    assert ProviderConfig.objects.get(pk=provider.pk).api_key == KEY
    assert KEY not in repr(ProviderConfig.objects.get(pk=provider.pk).api_key)


def test_it_never_shows_the_key_on_the_providers_page(provider, client_for, model_server):
    owner = client_for("site_owner")
    page = owner.get(reverse("providers"))
    html = page.content.decode()
    assert page.status_code == 200
    assert "scripted" in html and model_server.url in html and "gpt-test" in html
    assert "stored" in html
    assert KEY not in html

    # A refused form is shown again with what was typed, except the key.
    refused = post_provider(owner, model_server, base_url="not a url", api_key="sk-typed-999")
    assert refused.status_code == 400
    assert "sk-typed-999" not in refused.content.decode() and KEY not in refused.content.decode()
    assert ProviderConfig.objects.get(pk=provider.pk).api_key == KEY

    saved = post_provider(owner, model_server, api_key="sk-new-456", display_name="Scripted")
    assert saved.status_code == 302
    assert "sk-new-456" not in saved.content.decode()
    followed = owner.get(saved["Location"]).content.decode()
    assert "sk-new-456" not in followed and "Provider saved." in followed
    assert ProviderConfig.objects.get(pk=provider.pk).api_key == "sk-new-456"


def test_it_never_writes_the_key_to_the_audit_log(world, provider, model_server):
    services.provider_save(
        actor=world.site_owner,
        name="scripted",
        base_url=model_server.url + "/v1",
        default_model="gpt-test",
        api_key="sk-rotated-789",
    )
    services.provider_save(
        actor=world.site_owner, name="scripted", base_url=model_server.url + "/v1", default_model="gpt-test", api_key=""
    )
    events = list(AuditEvent.objects.filter(resource_type="provider").order_by("created_at", "id"))
    assert [e.action for e in events] == ["provider.create", "provider.update", "provider.update"]
    assert all(e.actor == world.site_owner and e.organization is None for e in events)
    assert all(e.changes["api_key"] == {"old": None, "new": audit.SECRET_MARK} for e in events)
    text = audit_text()
    assert KEY not in text and "sk-rotated-789" not in text
    assert "gAAAAA" not in text  # not even the encrypted form


def test_it_keeps_the_stored_key_when_the_key_is_left_blank(world, provider, client_for, model_server):
    services.provider_save(
        actor=world.site_owner,
        name="scripted",
        base_url=model_server.url + "/v1",
        default_model="gpt-test-2",
        api_key=None,
    )
    config = ProviderConfig.objects.get(pk=provider.pk)
    assert config.api_key == KEY and config.default_model == "gpt-test-2"

    response = post_provider(client_for("site_owner"), model_server, default_model="gpt-test-3", api_key="")
    assert response.status_code == 302
    config = ProviderConfig.objects.get(pk=provider.pk)
    assert config.api_key == KEY and config.default_model == "gpt-test-3"
    assert crypto.decrypt(raw_key(config)) == KEY

    updates = AuditEvent.objects.filter(action="provider.update").order_by("created_at", "id")
    assert [set(e.changes) for e in updates] == [{"default_model"}, {"default_model"}]


def test_it_removes_the_key_when_cleared(provider, client_for, model_server):
    owner = client_for("site_owner")
    response = post_provider(owner, model_server, api_key="typed-but-cleared", clear_api_key="on")
    assert response.status_code == 302
    config = ProviderConfig.objects.get(pk=provider.pk)
    assert config.api_key == "" and raw_key(config) == ""
    row = owner.get(reverse("providers")).content.decode()
    cells = row.split("<code>scripted</code>", 1)[1].split("</tr>", 1)[0]
    assert "stored" not in cells and "<td>none</td>" in cells
    event = AuditEvent.objects.filter(action="provider.update").get()
    assert event.changes["api_key"] == {"old": None, "new": audit.SECRET_MARK}
    assert "typed-but-cleared" not in audit_text()


def test_it_sends_the_key_only_to_the_provider(
    world, provider, client_for, model_server, django_capture_on_commit_callbacks
):
    model_server.script("Hello from the scripted model.")
    chat = services.chat_create(owner=world.member, organization=world.acme, provider="scripted")
    with django_capture_on_commit_callbacks(execute=True):
        services.message_send(chat=chat, content="hi")
    assert [r.authorization for r in model_server.requests] == [f"Bearer {KEY}"]

    member = client_for("member")
    responses = [
        member.get(reverse("agents")),
        member.get(reverse("chat", args=[chat.pk])),
        member.get(reverse("chat-skills", args=[chat.pk])),
        member.get("/api/v2/chats"),
        member.get(f"/api/v2/chats/{chat.pk}"),
        member.get(f"/api/v2/chats/{chat.pk}/messages"),
        client_for("site_owner").get(reverse("providers")),
    ]
    assert all(r.status_code == 200 for r in responses)
    assert "Hello from the scripted model." in responses[1].content.decode()
    for response in responses:
        body = response.content.decode()
        assert KEY not in body and raw_key(provider) not in body
    stored = json.dumps(
        [list(Message.objects.values()), list(ToolCall.objects.values()), list(Turn.objects.values())], default=str
    )
    assert KEY not in stored and KEY not in audit_text()


def test_it_sends_no_key_once_the_key_is_cleared(world, provider, model_server, django_capture_on_commit_callbacks):
    services.provider_save(
        actor=world.site_owner, name="scripted", base_url=model_server.url + "/v1", default_model="gpt-test", api_key=""
    )
    model_server.script("ok")
    chat = services.chat_create(owner=world.member, organization=world.acme, provider="scripted")
    with django_capture_on_commit_callbacks(execute=True):
        services.message_send(chat=chat, content="hi")
    assert len(model_server.requests) == 1
    assert KEY not in json.dumps(model_server.requests[0].headers)


def test_it_refuses_the_reserved_name_demo(world):
    from django.core.exceptions import ValidationError

    with pytest.raises(ValidationError):
        services.provider_save(
            actor=world.site_owner, name="demo", base_url="http://127.0.0.1:9/v1", default_model="m", api_key=KEY
        )
    assert not ProviderConfig.objects.filter(name="demo").exists()


@pytest.mark.parametrize(
    ("persona", "status"),
    [
        ("site_owner", 200),
        ("org_admin", 403),
        ("auditor", 403),
        ("outsider", 403),
        ("member", 404),
        ("anonymous", 302),
    ],
)
def test_it_lets_only_site_owners_see_the_providers_page(world, provider, client_for, persona, status):
    response = client_for(persona).get(reverse("providers"))
    assert response.status_code == status
    assert KEY not in response.content.decode()
    denied = AuditEvent.objects.filter(action="provider.read", outcome=Outcome.DENIED)
    if status == 403:
        event = denied.get()
        assert event.actor == world.user(persona) and event.resource_type == "provider"
    else:
        assert not denied.exists()
    if persona == "anonymous":
        assert response["Location"].startswith(reverse("login"))


@pytest.mark.parametrize(
    ("persona", "status"),
    [("org_admin", 403), ("auditor", 403), ("outsider", 403), ("member", 404), ("anonymous", 302)],
)
def test_it_lets_only_site_owners_change_providers(world, provider, client_for, model_server, persona, status):
    response = post_provider(
        client_for(persona), model_server, base_url="http://evil.example/v1", api_key="sk-attacker", clear_api_key="on"
    )
    assert response.status_code == status
    config = ProviderConfig.objects.get(pk=provider.pk)
    assert config.api_key == KEY and config.base_url == model_server.url + "/v1"
    assert not AuditEvent.objects.filter(action="provider.update", outcome=Outcome.SUCCESS).exists()
    denied = AuditEvent.objects.filter(action="provider.update", outcome=Outcome.DENIED)
    if status == 403:
        assert denied.get().actor == world.user(persona)
    else:
        assert not denied.exists()
