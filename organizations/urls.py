from django.urls import path

from . import oidc, views

urlpatterns = [
    path("", views.home, name="home"),
    path("login/", views.sign_in, name="login"),
    path("logout/", views.sign_out, name="logout"),
    path("login/oidc/", oidc.oidc_login, name="oidc-login"),
    path("login/oidc/callback", oidc.oidc_callback, name="oidc-callback"),
    path("settings/tokens/", views.api_tokens, name="api-tokens"),
    path("settings/tokens/<int:token_id>/revoke/", views.api_token_revoke, name="api-token-revoke"),
    path("settings/profile/", views.profile, name="profile"),
    path("ai/settings/organizations", views.organizations, name="organizations"),
    path("ai/settings/members", views.members, name="members"),
    path("ai/settings/members/<int:user_id>", views.member_update, name="member-update"),
    path("ai/settings/members/<int:user_id>/remove", views.member_remove, name="member-remove"),
    path("ai/settings/groups", views.groups, name="groups"),
    path("ai/settings/groups/<int:group_id>", views.group, name="group"),
    path("ai/settings/groups/<int:group_id>/delete", views.group_delete, name="group-delete"),
    path("ai/settings/roles", views.roles, name="roles"),
    path("ai/settings/roles/<int:role_id>", views.role, name="role"),
    path("ai/settings/roles/<int:role_id>/delete", views.role_delete, name="role-delete"),
    path("ai/settings/audit-log", views.audit_log, name="audit-log"),
]
