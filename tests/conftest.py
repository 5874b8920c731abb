"""Shared fixtures: the personas, built through the real services.

Personas (organization ``acme`` is the one under test, ``globex`` the other one):
site_owner (superuser, no membership), org_admin (admin of acme), auditor (auditor of acme),
member (member of acme), outsider (admin of globex: powerful elsewhere, nothing in acme), anonymous.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from django.test import Client

from organizations import services
from organizations.models import Organization, Role, User

PASSWORD = "correct horse battery staple"
PERSONAS = ("site_owner", "org_admin", "auditor", "member", "outsider", "anonymous")


@dataclass
class World:
    acme: Organization
    globex: Organization
    site_owner: User
    org_admin: User
    auditor: User
    member: User
    outsider: User

    def user(self, persona: str) -> User | None:
        return None if persona == "anonymous" else getattr(self, persona)


def make_user(username: str, **extra) -> User:
    return User.objects.create_user(username=username, email=f"{username}@example.test", password=PASSWORD, **extra)


def build_world() -> World:
    acme = services.organization_create(actor=None, name="acme", display_name="Acme Labs")
    globex = services.organization_create(actor=None, name="globex", display_name="Globex")
    site_owner = make_user("olivia", is_superuser=True, is_staff=True)
    org_admin = make_user("alice")
    auditor = make_user("audrey")
    member = make_user("bob")
    outsider = make_user("gina")
    services.membership_add(actor=None, organization=acme, user=org_admin, role=Role.ADMIN)
    services.membership_add(actor=None, organization=acme, user=auditor, role=Role.AUDITOR)
    services.membership_add(actor=None, organization=acme, user=member, role=Role.MEMBER)
    services.membership_add(actor=None, organization=globex, user=outsider, role=Role.ADMIN)
    return World(acme, globex, site_owner, org_admin, auditor, member, outsider)


@pytest.fixture
def world(db) -> World:
    return build_world()


@pytest.fixture
def client_for(world):
    """``client_for("auditor")`` → a test client signed in as that persona (anonymous: not signed in)."""

    def make(persona: str) -> Client:
        client = Client()
        user = world.user(persona)
        if user is not None:
            client.force_login(user)
        return client

    return make


@pytest.fixture(autouse=True)
def _fresh_cache():
    """Sign-in failure counters and other cached values never leak from one test into the next."""
    from django.core.cache import cache

    cache.clear()
    yield
    cache.clear()
