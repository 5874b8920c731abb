"""The 100-skill caps hold when creates race: the owner's row is locked while counting, so never 101.

Each thread has its own database connection (closed at its end) and all of them start together behind a barrier.
On PostgreSQL the creates truly overlap and the row lock serializes the counting; on SQLite every write transaction
starts with BEGIN IMMEDIATE, so SQLite serializes them itself, and the test checks the same outcome.
"""

from __future__ import annotations

import threading
from collections import Counter

import pytest
from django.db import connection

from skills import services
from skills.models import OrganizationSkill, PersonalSkill
from skills.services import SkillError

THREADS = 12
PREFILLED = 95


def md(name: str) -> str:
    return f"---\nname: {name}\ndescription: Helps with {name}.\n---\n\n# Steps\n\nDo {name}.\n"


def race(create, names: list[str]) -> list[object]:
    """Run ``create(name)`` for every name in its own thread, all released at once; the result or SkillError of each."""
    barrier = threading.Barrier(len(names), timeout=30)
    results: list[object] = [None] * len(names)

    def work(index: int, name: str) -> None:
        try:
            barrier.wait()
            results[index] = create(name)
        except SkillError as exc:
            results[index] = exc
        except Exception as exc:  # reported below: anything but a skill or a SkillError fails the test
            results[index] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=work, args=(i, name)) for i, name in enumerate(names)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads), "a create never finished"
    return results


def outcomes(results: list[object]) -> Counter:
    unexpected = [r for r in results if not isinstance(r, SkillError | PersonalSkill | OrganizationSkill)]
    assert not unexpected, unexpected
    return Counter("created" if not isinstance(r, SkillError) else (r.status, r.message, r.detail) for r in results)


@pytest.mark.parametrize("kind", ["personal", "organization"])
def test_the_cap_holds_under_concurrent_creates(transactional_db, world, kind):
    if kind == "personal":

        def create(name: str):
            return services.personal_skill_create(user=world.member, content=md(name))

        def stored():
            return PersonalSkill.objects.filter(owner=world.member)

        refusal = (409, "Personal skill limit reached.", "Each user can have at most 100 personal skills.")
    else:

        def create(name: str):
            return services.organization_skill_create(actor=world.org_admin, organization=world.acme, content=md(name))

        def stored():
            return OrganizationSkill.objects.filter(organization=world.acme)

        refusal = (409, "Organization skill limit reached.", "Each organization can have at most 100 skills.")

    for i in range(PREFILLED):
        create(f"existing-{i:03}")
    names = [f"racer-{i:02}" for i in range(THREADS)]
    results = race(create, names)

    assert outcomes(results) == Counter({"created": 100 - PREFILLED, refusal: THREADS - 100 + PREFILLED})
    assert stored().count() == 100
    winners = {r.name for r in results if not isinstance(r, SkillError)}
    assert set(stored().filter(name__startswith="racer-").values_list("name", flat=True)) == winners


@pytest.mark.parametrize("kind", ["personal", "organization"])
def test_racing_creates_of_one_name_store_it_once(transactional_db, world, kind):
    if kind == "personal":

        def create(name: str):
            return services.personal_skill_create(user=world.member, content=md(name))

        model = PersonalSkill
    else:

        def create(name: str):
            return services.organization_skill_create(actor=world.org_admin, organization=world.acme, content=md(name))

        model = OrganizationSkill

    results = race(create, ["same-name"] * THREADS)
    assert outcomes(results) == Counter(
        {"created": 1, (409, "A skill with that name already exists.", ""): THREADS - 1}
    )
    assert model.objects.filter(name="same-name").count() == 1
