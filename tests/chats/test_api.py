"""The chats JSON API (chats/api.py) at the documented paths (rules.md, "Endpoints: Chats"; "API shapes"):
create, list, get, rename, messages (with tool calls), send (the turn runs on Celery, eager in tests, once the
request commits), Refresh context and Stop. Error bodies are exactly ``{"message", "detail", "validations"}``."""

from __future__ import annotations

import json

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from chats import pinning
from chats.models import Chat, Turn, TurnStatus
from organizations import services as org_services
from organizations.models import AuditEvent, Role

from .test_context import new_chat, new_workspace, org_skill, personal, push, write_skill

API = "/api/v2/chats"
ERROR_KEYS = {"message", "detail", "validations"}
CHAT_KEYS = {
    "id",
    "title",
    "organization",
    "workspace_id",
    "provider",
    "model",
    "pinned_snapshot_version",
    "out_of_date",
    "running",
    "created_at",
    "updated_at",
}
NOT_FOUND = "Resource not found or you do not have access to this resource"


def send(client: Client, method: str, url: str, body: dict | None = None, **extra):
    return getattr(client, method)(url, json.dumps(body or {}), content_type="application/json", **extra)


def assert_error(response, status: int, message: str, detail: str | None = None) -> dict:
    assert response.status_code == status, response.content
    body = response.json()
    assert set(body) == ERROR_KEYS, body
    assert body["message"] == message
    if detail is not None:
        assert body["detail"] == detail
    assert isinstance(body["validations"], list)
    return body


@pytest.fixture
def bob(client_for) -> Client:
    return client_for("member")


# Create, list, get, rename --------------------------------------------------------------------------------------------


def test_it_creates_a_chat(world, bob):
    response = send(bob, "post", API, {"organization": "acme"})
    assert response.status_code == 201, response.content
    body = response.json()
    assert set(body) == CHAT_KEYS
    chat = Chat.objects.get(pk=body["id"])
    assert chat.owner == world.member and chat.organization == world.acme
    assert {k: body[k] for k in CHAT_KEYS - {"id", "created_at", "updated_at"}} == {
        "title": "New chat",
        "organization": "acme",
        "workspace_id": None,
        "provider": "demo",
        "model": "",
        "pinned_snapshot_version": None,
        "out_of_date": False,
        "running": False,
    }
    assert AuditEvent.objects.filter(action="chat.create", resource_id=str(chat.pk), actor=world.member).exists()


def test_a_chat_on_a_workspace_pins_its_latest_snapshot(world, bob, tmp_path):
    workspace = new_workspace(world)
    write_skill(tmp_path, "hello")
    push(workspace, tmp_path)
    write_skill(tmp_path, "bye")
    push(workspace, tmp_path)
    response = send(bob, "post", API, {"organization": "acme", "workspace_id": workspace.pk, "model": " m1 "})
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["workspace_id"], body["pinned_snapshot_version"], body["model"]) == (workspace.pk, 2, "m1")


def test_it_refuses_bad_create_requests(world, bob):
    alices = new_workspace(world, name="alice-box", owner=world.org_admin)
    body = assert_error(
        send(bob, "post", API, {"organization": "acme", "workspace_id": alices.pk}),
        400,
        "Choose one of your workspaces.",
    )
    assert body["validations"] == [{"field": "workspace_id", "detail": "Choose one of your workspaces."}]
    body = assert_error(
        send(bob, "post", API, {"organization": "acme", "provider": "nowhere"}),
        400,
        "Choose a configured model provider.",
    )
    assert body["validations"] == [{"field": "provider", "detail": "Choose a configured model provider."}]
    assert_error(send(bob, "post", API, {"organization": "globex"}), 404, NOT_FOUND)
    assert_error(send(bob, "post", API, {"organization": "nope"}), 404, NOT_FOUND)
    body = assert_error(send(bob, "post", API, {}), 400, "Invalid request.")
    assert body["validations"] == [{"field": "payload.organization", "detail": "Field required"}]
    assert_error(bob.post(API, "not json", content_type="application/json"), 400, "Cannot parse request body")
    assert not Chat.objects.exists()


def test_the_list_holds_only_the_callers_own_chats(world, bob, client_for):
    mine = [new_chat(world), new_chat(world)]
    new_chat(world, owner=world.org_admin)
    response = bob.get(API)
    assert response.status_code == 200
    body = response.json()
    assert sorted(c["id"] for c in body) == sorted(c.pk for c in mine)
    assert all(set(c) == CHAT_KEYS for c in body)
    assert [c["id"] for c in client_for("site_owner").get(API).json()] == []  # site owners see no one's chats


def test_the_list_makes_a_bounded_number_of_queries(world, bob):
    new_chat(world)
    bob.get(API)
    with CaptureQueriesContext(connection) as one:
        assert len(bob.get(API).json()) == 1
    for _ in range(9):
        new_chat(world)
    with CaptureQueriesContext(connection) as ten:
        assert len(bob.get(API).json()) == 10
    assert len(ten) == len(one), f"{len(one)} queries for 1 chat, {len(ten)} for 10"


def test_a_former_member_no_longer_lists_or_opens_the_chats_of_that_organization(world, bob):
    chat = new_chat(world)
    membership = world.member.memberships.get(organization=world.acme)
    org_services.membership_remove(actor=world.org_admin, membership=membership)
    assert bob.get(API).json() == []
    assert_error(bob.get(f"{API}/{chat.pk}"), 404, NOT_FOUND)


def test_it_gets_one_chat_and_only_the_owners(world, bob, client_for):
    chat = new_chat(world)
    response = bob.get(f"{API}/{chat.pk}")
    assert response.status_code == 200
    assert response.json()["id"] == chat.pk and response.json()["title"] == "New chat"
    for persona in ("site_owner", "org_admin", "auditor", "outsider"):
        assert_error(client_for(persona).get(f"{API}/{chat.pk}"), 404, NOT_FOUND)
    assert_error(bob.get(f"{API}/999999"), 404, NOT_FOUND)
    assert_error(
        Client().get(f"{API}/{chat.pk}"), 401, "You are not signed in, or the API token is invalid or expired."
    )


def test_it_renames_a_chat(world, bob):
    chat = new_chat(world)
    response = send(bob, "patch", f"{API}/{chat.pk}", {"title": "  Release notes  "})
    assert response.status_code == 200, response.content
    assert response.json()["title"] == "Release notes"
    chat.refresh_from_db()
    assert chat.title == "Release notes"


@pytest.mark.parametrize("title", ["", "   ", "x" * 201])
def test_it_refuses_an_empty_or_long_title(world, bob, title):
    chat = new_chat(world)
    body = assert_error(send(bob, "patch", f"{API}/{chat.pk}", {"title": title}), 400, "Use 1 to 200 characters.")
    assert body["validations"] == [{"field": "title", "detail": "Use 1 to 200 characters."}]
    chat.refresh_from_db()
    assert chat.title == "New chat"


def test_a_rename_without_a_title_is_an_invalid_request(world, bob):
    chat = new_chat(world)
    assert_error(send(bob, "patch", f"{API}/{chat.pk}", {}), 400, "Invalid request.")


# Messages and turns --------------------------------------------------------------------------------------------------


def test_sending_a_message_queues_a_turn_that_runs_after_commit(world, bob, django_capture_on_commit_callbacks):
    chat = new_chat(world)
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = send(bob, "post", f"{API}/{chat.pk}/messages", {"content": "Hello agent\nsecond line"})
    assert response.status_code == 201, response.content
    body = response.json()
    assert set(body) == {"turn_id", "status"} and body["status"] == TurnStatus.QUEUED
    assert callbacks, "the turn is enqueued on commit"
    turn = Turn.objects.get(pk=body["turn_id"])
    assert turn.chat_id == chat.pk and turn.status == TurnStatus.DONE and turn.steps == 1
    detail = bob.get(f"{API}/{chat.pk}").json()
    assert detail["title"] == "Hello agent" and detail["running"] is False
    roles = [m["role"] for m in bob.get(f"{API}/{chat.pk}/messages").json()]
    assert roles == ["user", "assistant"]


def test_the_message_list_includes_tool_calls(world, bob, django_capture_on_commit_callbacks):
    personal(world.member, "hello")
    chat = new_chat(world)
    with django_capture_on_commit_callbacks(execute=True):
        assert send(bob, "post", f"{API}/{chat.pk}/messages", {"content": "please /hello"}).status_code == 201
    response = bob.get(f"{API}/{chat.pk}/messages")
    assert response.status_code == 200
    messages = response.json()
    assert [(m["role"], m["tool_call_id"]) for m in messages] == [
        ("user", ""),
        ("assistant", ""),
        ("tool", "demo-read-1"),
        ("assistant", ""),
    ]
    assert all(set(m) == {"id", "role", "content", "tool_call_id", "tool_calls", "created_at"} for m in messages)
    assert messages[0]["content"] == "please /hello" and messages[0]["tool_calls"] == []
    (call,) = messages[1]["tool_calls"]
    assert {k: call[k] for k in ("id", "name", "arguments", "is_error", "label")} == {
        "id": "demo-read-1",
        "name": "read_skill",
        "arguments": {"name": "hello"},
        "is_error": False,
        "label": "Reading skill hello",
    }
    assert json.loads(call["result"]) == {"name": "hello", "body": "# hello\n\nDo hello.\n"}
    assert messages[2]["content"] == call["result"]
    assert "I read the skill **hello**" in messages[3]["content"]


def test_a_failed_tool_call_is_listed_as_an_error(world, bob, django_capture_on_commit_callbacks):
    personal(world.member, "review")
    org_skill(world, "review")  # the same name in two sources: the bare name is ambiguous
    chat = new_chat(world)
    with django_capture_on_commit_callbacks(execute=True):
        send(bob, "post", f"{API}/{chat.pk}/messages", {"content": "/review"})
    messages = bob.get(f"{API}/{chat.pk}/messages").json()
    (call,) = messages[1]["tool_calls"]
    assert call["is_error"] is True
    assert call["result"] == "skill lookup is ambiguous: review matches personal/review, org/review"


def test_a_second_message_while_a_turn_is_queued_is_refused_with_409(world, bob):
    chat = new_chat(world)
    first = send(bob, "post", f"{API}/{chat.pk}/messages", {"content": "one"})  # on_commit never runs: stays queued
    assert first.status_code == 201
    assert bob.get(f"{API}/{chat.pk}").json()["running"] is True
    body = assert_error(
        send(bob, "post", f"{API}/{chat.pk}/messages", {"content": "two"}),
        409,
        "The agent is still working on the last message.",
        "Wait for it, or press Stop.",
    )
    assert body["validations"] == []
    assert [m["content"] for m in bob.get(f"{API}/{chat.pk}/messages").json()] == ["one"]


@pytest.mark.parametrize(
    ("content", "message"),
    [("", "Message is required."), ("   \n", "Message is required."), ("x" * 32_001, "Message is too long.")],
)
def test_it_refuses_empty_and_overlong_messages(world, bob, content, message):
    chat = new_chat(world)
    assert_error(send(bob, "post", f"{API}/{chat.pk}/messages", {"content": content}), 400, message)
    assert not chat.turns.exists() and not chat.messages.exists()


def test_nobody_else_sends_to_or_reads_a_chat(world, client_for):
    chat = new_chat(world)
    for persona in ("site_owner", "org_admin", "auditor", "outsider"):
        client = client_for(persona)
        assert_error(send(client, "post", f"{API}/{chat.pk}/messages", {"content": "hi"}), 404, NOT_FOUND)
        assert_error(client.get(f"{API}/{chat.pk}/messages"), 404, NOT_FOUND)
    assert not chat.messages.exists()


# Stop and Refresh context --------------------------------------------------------------------------------------------


def test_interrupt_stops_a_queued_turn_and_says_whether_anything_was_running(world, bob):
    chat = new_chat(world)
    response = send(bob, "post", f"{API}/{chat.pk}/interrupt")
    assert response.status_code == 200 and response.json() == {"interrupted": False}
    sent = send(bob, "post", f"{API}/{chat.pk}/messages", {"content": "one"}).json()
    response = send(bob, "post", f"{API}/{chat.pk}/interrupt")
    assert response.status_code == 200 and response.json() == {"interrupted": True}
    turn = Turn.objects.get(pk=sent["turn_id"])
    assert turn.status == TurnStatus.STOPPED and turn.interrupt_requested and turn.finished_at is not None
    assert AuditEvent.objects.filter(action="chat.interrupt", resource_id=str(chat.pk)).count() == 1
    assert send(bob, "post", f"{API}/{chat.pk}/messages", {"content": "two"}).status_code == 201  # free again
    assert send(bob, "post", f"{API}/{chat.pk}/interrupt").json() == {"interrupted": True}
    assert send(bob, "post", f"{API}/{chat.pk}/interrupt").json() == {"interrupted": False}


def test_put_context_repins_the_chat_to_the_latest_snapshot(world, bob, tmp_path):
    workspace = new_workspace(world)
    write_skill(tmp_path, "hello")
    push(workspace, tmp_path)
    chat = pinning.hydrate(new_chat(world, workspace=workspace))
    write_skill(tmp_path, "bye")
    push(workspace, tmp_path)
    before = bob.get(f"{API}/{chat.pk}").json()
    assert (before["pinned_snapshot_version"], before["out_of_date"]) == (1, True)
    response = send(bob, "put", f"{API}/{chat.pk}/context")
    assert response.status_code == 200, response.content
    body = response.json()
    assert set(body) == CHAT_KEYS
    assert (body["pinned_snapshot_version"], body["out_of_date"]) == (2, False)
    event = AuditEvent.objects.get(action="chat.refresh_context")
    assert event.changes == {"snapshot_version": {"old": 1, "new": 2}}


def test_put_context_on_a_chat_without_a_workspace_changes_nothing(world, bob):
    chat = new_chat(world)
    body = send(bob, "put", f"{API}/{chat.pk}/context").json()
    assert (body["pinned_snapshot_version"], body["out_of_date"]) == (None, False)


# Credentials ---------------------------------------------------------------------------------------------------------


def test_a_personal_api_token_works_without_a_csrf_token(world):
    _row, token = org_services.api_token_create(user=world.member, name="script")
    client = Client(enforce_csrf_checks=True)
    bearer = {"Authorization": f"Bearer {token}"}
    created = send(client, "post", API, {"organization": "acme"}, headers=bearer)
    assert created.status_code == 201, created.content
    assert [c["id"] for c in client.get(API, headers=bearer).json()] == [created.json()["id"]]


def test_a_session_write_needs_the_csrf_token(world):
    client = Client(enforce_csrf_checks=True)
    client.force_login(world.member)
    response = send(client, "post", API, {"organization": "acme"})
    assert response.status_code == 403
    assert set(response.json()) == ERROR_KEYS
    assert not Chat.objects.exists()


def test_a_member_of_two_organizations_chats_in_either(world, bob):
    org_services.membership_add(actor=None, organization=world.globex, user=world.member, role=Role.MEMBER)
    for name in ("acme", "globex"):
        assert send(bob, "post", API, {"organization": name}).json()["organization"] == name


def test_renaming_is_audited_and_touches_updated_at(world, bob):
    from organizations.models import AuditEvent

    chat = new_chat(world)
    before = chat.updated_at
    response = bob.patch(f"{API}/{chat.pk}", {"title": "Renamed"}, content_type="application/json")
    assert response.status_code == 200 and response.json()["title"] == "Renamed"
    chat.refresh_from_db()
    assert chat.updated_at > before
    event = AuditEvent.objects.get(action="chat.rename")
    assert event.changes == {"title": {"old": "New chat", "new": "Renamed"}}
