"""Every chats page and API endpoint × every persona → the expected status.

The chat belongs to the member bob in acme (attached to his workspace): a chat is its owner's alone, so bob gets
200 (page, API read), 302 (a page write redirecting back) or 201 (API create); everyone else, the site owner
included, gets 404, the same answer as for a chat that does not exist. Anonymous callers get 302 to sign-in for pages
and 401 for the API. Admin settings → Providers is the site owner's: other administrators get 403, people who
administer nothing get 404.
"""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from chats import services as chat_services
from chats.models import Chat
from organizations.models import AuditEvent
from workspaces import services as ws_services
from workspaces.models import Workspace

from ..conftest import PERSONAS, World
from ..organizations.test_permission_matrix import ALL, Endpoint

COVERED_ROUTES = frozenset(
    {
        "agents",
        "chat-new",
        "chat",
        "chat-send",
        "chat-interrupt",
        "chat-refresh",
        "chat-skills",
        "chat-mcp-servers",
        "providers",
    }
)
API = "/api/v2/chats"


def _chat(world: World) -> Chat:
    chat = Chat.objects.filter(owner=world.member).first()
    if chat is None:
        workspace = Workspace.objects.filter(name="bob-laptop").first()
        if workspace is None:
            workspace, _token = ws_services.workspace_create(
                actor=world.member, organization=world.acme, name="bob-laptop"
            )
        chat = chat_services.chat_create(owner=world.member, organization=world.acme, workspace=workspace)
    return chat


def _page(name: str):
    return lambda w: reverse(name, args=[_chat(w).pk])


def _api(suffix: str = ""):
    return lambda w: f"{API}/{_chat(w).pk}{suffix}"


def OWNER_ONLY(code: int, anonymous: int) -> dict[str, int]:
    """Bob's chat: bob gets ``code``, every other signed-in persona 404."""
    return ALL(404, anonymous=anonymous) | {"member": code}


PROVIDERS_READ = {"site_owner": 200, "org_admin": 403, "auditor": 403, "member": 404, "outsider": 403, "anonymous": 302}
PROVIDERS_WRITE = PROVIDERS_READ | {"site_owner": 302}

ENDPOINTS = [
    Endpoint("agents", "get", lambda w: reverse("agents"), ALL(200)),
    # Everyone signed in is sent back: bob (and the org admin and auditor, members of acme) to the new chat,
    # the others to the Agents page with "Choose one of your organizations.".
    Endpoint("chat new", "post", lambda w: reverse("chat-new"), ALL(302), lambda w: {"organization": "acme"}),
    Endpoint("chat", "get", _page("chat"), OWNER_ONLY(200, 302)),
    Endpoint("chat send", "post", _page("chat-send"), OWNER_ONLY(302, 302), lambda w: {"content": "hello"}),
    Endpoint("chat interrupt", "post", _page("chat-interrupt"), OWNER_ONLY(302, 302)),
    Endpoint("chat refresh context", "post", _page("chat-refresh"), OWNER_ONLY(302, 302)),
    Endpoint("chat skills (/ menu)", "get", _page("chat-skills"), OWNER_ONLY(200, 302)),
    Endpoint("chat MCP servers", "post", _page("chat-mcp-servers"), OWNER_ONLY(302, 302), lambda w: {"servers": []}),
    # A wrong method is refused before the chat is looked up, whoever asks and whatever the id: nothing leaks.
    Endpoint("chat (POST)", "post", _page("chat"), ALL(405)),
    Endpoint("chat skills (POST)", "post", _page("chat-skills"), ALL(405)),
    Endpoint("chat send (GET)", "get", _page("chat-send"), ALL(405)),
    Endpoint("providers", "get", lambda w: reverse("providers"), PROVIDERS_READ),
    Endpoint(
        "provider save",
        "post",
        lambda w: reverse("providers"),
        PROVIDERS_WRITE,
        lambda w: {
            "name": "local",
            "base_url": "http://localhost:11434/v1",
            "default_model": "llama3",
            "api_key": "sk-test",
            "enabled": "on",
        },
    ),
    Endpoint("api chats", "api-get", lambda w: API, ALL(200, anonymous=401)),
    Endpoint(
        "api chat create",
        "api-post",
        lambda w: API,
        # Members of acme create their own chat; the site owner sees acme but is no member of it (400);
        # the outsider does not see acme at all (404).
        {"site_owner": 400, "org_admin": 201, "auditor": 201, "member": 201, "outsider": 404, "anonymous": 401},
        lambda w: {"organization": "acme"},
    ),
    Endpoint("api chat", "api-get", _api(), OWNER_ONLY(200, 401)),
    Endpoint("api chat rename", "api-patch", _api(), OWNER_ONLY(200, 401), lambda w: {"title": "Renamed"}),
    Endpoint("api chat messages", "api-get", _api("/messages"), OWNER_ONLY(200, 401)),
    Endpoint("api chat send", "api-post", _api("/messages"), OWNER_ONLY(201, 401), lambda w: {"content": "hi"}),
    Endpoint("api chat refresh context", "api-put", _api("/context"), OWNER_ONLY(200, 401)),
    Endpoint("api chat interrupt", "api-post", _api("/interrupt"), OWNER_ONLY(200, 401)),
]


def request(client, endpoint: Endpoint, world: World):
    url = endpoint.url(world)
    data = endpoint.data(world) if endpoint.data else {}
    if endpoint.method == "get":
        return client.get(url)
    if endpoint.method == "post":
        return client.post(url, data)
    verb = endpoint.method.removeprefix("api-")
    if verb == "get":
        return client.get(url)
    return getattr(client, verb)(url, json.dumps(data), content_type="application/json")


@pytest.mark.parametrize("persona", PERSONAS)
@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=lambda e: e.name)
def test_it_answers_each_persona_as_the_policy_says(world, client_for, endpoint: Endpoint, persona: str):
    response = request(client_for(persona), endpoint, world)
    expected = endpoint.expect[persona]
    assert response.status_code == expected, (
        f"{endpoint.name} as {persona}: {response.status_code}, expected {expected}"
    )
    if persona == "anonymous" and expected == 302:
        assert response["Location"].startswith(reverse("login"))
    if endpoint.method.startswith("api-") and expected >= 400:
        assert set(response.json()) == {"message", "detail", "validations"}, response.content


@pytest.mark.parametrize("persona", [p for p in PERSONAS if p not in {"member", "anonymous"}])
def test_nobody_else_changes_bobs_chat(world, client_for, persona):
    """The refused writes leave no trace: no message, no turn, title and pin unchanged."""
    chat = _chat(world)
    client = client_for(persona)
    writes = [
        e
        for e in ENDPOINTS
        if e.method not in {"get", "api-get"} and e.name not in {"chat new", "api chat create", "provider save"}
    ]
    assert len(writes) == 10
    for endpoint in writes:
        assert request(client, endpoint, world).status_code in {404, 405}, endpoint.name
    chat.refresh_from_db()
    assert chat.title == "New chat" and not chat.messages.exists() and not chat.turns.exists()
    assert set(AuditEvent.objects.filter(resource_type="chat").values_list("action", flat=True)) == {"chat.create"}


def test_it_covers_every_chats_route():
    from chats.urls import urlpatterns

    assert {p.name for p in urlpatterns} == COVERED_ROUTES
