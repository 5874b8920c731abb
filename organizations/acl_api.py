"""The ACL wire format shared by every API that exposes an object's list (skills, MCP servers):
``GET …/acl`` → ``{"users": [{"id", "username", "role"}], "groups": [{"id", "name", "role"}]}`` and
``GET …/acl/available`` → the organization's members and groups that can be added."""

from __future__ import annotations

from ninja import Schema

from . import acl
from .models import Organization


class AclUser(Schema):
    id: int
    username: str
    role: str


class AclGroup(Schema):
    id: int
    name: str
    role: str


class AclOut(Schema):
    users: list[AclUser]
    groups: list[AclGroup]


class AvailableUser(Schema):
    id: int
    username: str
    name: str


class AvailableGroup(Schema):
    id: int
    name: str


class AvailableOut(Schema):
    users: list[AvailableUser]
    groups: list[AvailableGroup]


def acl_out(entries: list[acl.AclEntry]) -> dict:
    return {
        "users": [{"id": e.id, "username": e.name, "role": e.role} for e in entries if e.kind == "user"],
        "groups": [{"id": e.id, "name": e.name, "role": e.role} for e in entries if e.kind == "group"],
    }


def available_out(organization: Organization) -> dict:
    available = acl.available(organization)
    return {
        "users": [{"id": u.pk, "username": u.username, "name": u.get_full_name()} for u in available["users"]],
        "groups": [{"id": g.pk, "name": g.name} for g in available["groups"]],
    }
