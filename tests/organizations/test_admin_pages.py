"""Organizations, members, groups and roles pages: the happy paths, validation, confirmation and query counts."""

from __future__ import annotations

from django.urls import reverse

from organizations import services
from organizations.models import AuditEvent, CustomRole, Membership, Organization, OrgGroup, Role

from ..conftest import make_user


def test_site_owners_create_organizations_with_an_everyone_group(world, client_for):
    response = client_for("site_owner").post(reverse("organizations"), {"name": "initech", "display_name": "Initech"})
    assert response.status_code == 302
    org = Organization.objects.get(name="initech")
    assert org.display_name == "Initech"
    assert OrgGroup.objects.filter(organization=org, is_everyone=True).exists()
    assert AuditEvent.objects.filter(action="organization.create", organization=org, actor=world.site_owner).exists()


def test_it_refuses_bad_organization_names_and_changes_nothing(world, client_for):
    client = client_for("site_owner")
    for bad in ("Has Spaces", "-leading", "double--hyphen", "acme"):
        response = client.post(reverse("organizations"), {"name": bad})
        assert response.status_code == 400, bad
        assert 'class="form-errors"' in response.content.decode()
    assert Organization.objects.count() == 2


def test_org_admins_add_members_by_username_or_email(world, client_for):
    newcomer = make_user("nina")
    client = client_for("org_admin")
    response = client.post(reverse("members") + "?org=acme", {"user": "NINA@example.test", "role": "auditor"})
    assert response.status_code == 302
    assert Membership.objects.get(organization=world.acme, user=newcomer).role == Role.AUDITOR
    response = client.post(reverse("members") + "?org=acme", {"user": "nina", "role": "member"})
    assert response.status_code == 400
    assert "not already a member" in response.content.decode()
    response = client.post(reverse("members") + "?org=acme", {"user": "nobody", "role": "member"})
    assert response.status_code == 400


def test_org_admins_change_roles_and_custom_roles(world, client_for):
    role = services.custom_role_create(
        actor=world.org_admin, organization=world.acme, name="Publishers", perms=["organization_skill:create"]
    )
    foreign = services.custom_role_create(
        actor=world.outsider, organization=world.globex, name="Foreign", perms=["audit_log:read"]
    )
    client = client_for("org_admin")
    url = reverse("member-update", args=[world.member.pk]) + "?org=acme"
    assert client.post(url, {"role": "auditor", "custom_roles": [role.pk]}).status_code == 302
    membership = Membership.objects.get(organization=world.acme, user=world.member)
    assert membership.role == Role.AUDITOR and list(membership.custom_roles.all()) == [role]
    # A role of another organization is refused and nothing changes.
    client.post(url, {"role": "member", "custom_roles": [foreign.pk]})
    membership.refresh_from_db()
    assert list(membership.custom_roles.all()) == [role]


def test_removing_a_member_asks_first(world, client_for):
    client = client_for("org_admin")
    url = reverse("member-remove", args=[world.member.pk]) + "?org=acme"
    confirm = client.get(url)
    assert confirm.status_code == 200 and "Remove bob from Acme Labs?" in confirm.content.decode()
    assert Membership.objects.filter(organization=world.acme, user=world.member).exists()
    assert client.post(url).status_code == 302
    assert not Membership.objects.filter(organization=world.acme, user=world.member).exists()


def test_a_member_of_another_organization_is_not_found_on_this_one(world, client_for):
    url = reverse("member-remove", args=[world.outsider.pk]) + "?org=acme"
    assert client_for("org_admin").get(url).status_code == 404


def test_groups_can_be_created_renamed_filled_and_deleted(world, client_for):
    client = client_for("org_admin")
    response = client.post(reverse("groups") + "?org=acme", {"name": "Engineering"})
    group = OrgGroup.objects.get(organization=world.acme, name="Engineering")
    assert response["Location"] == reverse("group", args=[group.pk])
    url = reverse("group", args=[group.pk])
    assert client.post(url, {"op": "rename", "name": "Platform"}).status_code == 302
    assert client.post(url, {"op": "add", "user": world.member.pk}).status_code == 302
    assert client.post(url, {"op": "add", "user": world.outsider.pk}).status_code == 400
    group.refresh_from_db()
    assert group.name == "Platform"
    assert list(group.auth_group.user_set.values_list("username", flat=True)) == ["bob"]
    assert client.post(url, {"op": "remove", "user": world.member.pk}).status_code == 302
    assert not group.auth_group.user_set.exists()
    assert client.get(reverse("group-delete", args=[group.pk])).status_code == 200
    assert client.post(reverse("group-delete", args=[group.pk])).status_code == 302
    assert not OrgGroup.objects.filter(pk=group.pk).exists()
    actions = list(AuditEvent.objects.filter(resource_type="group").values_list("action", flat=True))
    assert {"group.create", "group.update", "group.member_add", "group.member_remove", "group.delete"} <= set(actions)


def test_the_everyone_group_cannot_be_deleted_from_the_page(world, client_for):
    everyone = OrgGroup.objects.get(organization=world.acme, is_everyone=True)
    response = client_for("org_admin").post(reverse("group-delete", args=[everyone.pk]))
    assert response.status_code == 302
    assert OrgGroup.objects.filter(pk=everyone.pk).exists()


def test_custom_roles_can_be_created_edited_and_deleted(world, client_for):
    client = client_for("org_admin")
    response = client.post(
        reverse("roles") + "?org=acme",
        {"name": "MCP admins", "permissions": ["mcp_server:create", "mcp_server:update"]},
    )
    assert response.status_code == 302
    role = CustomRole.objects.get(organization=world.acme, name="MCP admins")
    assert role.permissions == ["mcp_server:create", "mcp_server:update"]
    response = client.post(reverse("role", args=[role.pk]), {"name": "MCP admins", "permissions": ["nope:nope"]})
    assert response.status_code == 400
    role.refresh_from_db()
    assert role.permissions == ["mcp_server:create", "mcp_server:update"]
    response = client.post(reverse("role", args=[role.pk]), {"name": "MCP readers", "permissions": ["mcp_server:read"]})
    assert response.status_code == 302
    role.refresh_from_db()
    assert (role.name, role.permissions) == ("MCP readers", ["mcp_server:read"])
    assert client.post(reverse("role-delete", args=[role.pk])).status_code == 302
    assert not CustomRole.objects.filter(pk=role.pk).exists()


def test_auditors_see_pages_without_write_controls(world, client_for):
    body = client_for("auditor").get(reverse("members") + "?org=acme").content.decode()
    assert "Add a member" not in body and "Remove" not in body
    assert "bob" in body


def test_the_organization_picker_appears_only_with_several_organizations(world, client_for):
    body = client_for("org_admin").get(reverse("members") + "?org=acme").content.decode()
    assert 'id="org-picker"' not in body
    body = client_for("site_owner").get(reverse("members") + "?org=acme").content.decode()
    assert 'id="org-picker"' in body and 'value="globex"' in body


def test_list_pages_run_a_fixed_number_of_queries(world, client_for, django_assert_max_num_queries):
    """Members, groups and roles pages: the query count does not grow with the rows."""
    client = client_for("org_admin")
    urls = [reverse(name) + "?org=acme" for name in ("members", "groups", "roles")] + [reverse("organizations")]
    baseline = {}
    for url in urls:
        with django_assert_max_num_queries(30) as ctx:
            assert client.get(url).status_code == 200
        baseline[url] = len(ctx.captured_queries)
    for i in range(15):
        user = make_user(f"extra{i}")
        services.membership_add(actor=None, organization=world.acme, user=user, role=Role.MEMBER)
        group = services.group_create(actor=world.org_admin, organization=world.acme, name=f"Group {i}")
        services.group_add_member(actor=world.org_admin, group=group, user=user)
        role = services.custom_role_create(
            actor=world.org_admin, organization=world.acme, name=f"Role {i}", perms=["audit_log:read"]
        )
        membership = Membership.objects.get(organization=world.acme, user=user)
        services.membership_set_custom_roles(actor=world.org_admin, membership=membership, roles=[role])
    for url in urls:
        with django_assert_max_num_queries(baseline[url]):
            assert client.get(url).status_code == 200
