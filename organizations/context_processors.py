from __future__ import annotations

from . import access
from .permissions import ORGANIZATION_READ


def navigation(request) -> dict:
    """What the navigation shows: Admin settings for site owners, admins and auditors (and custom roles that
    can read the audit log); the audit log entry for whoever may read it somewhere."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    site_owner = access.is_site_owner(user)
    perms: set[str] = set()
    if not site_owner:
        for org_perms in access.permissions_by_org(user).values():
            perms |= org_perms
    return {
        "nav_admin": site_owner
        or bool(perms & {ORGANIZATION_READ, "audit_log:read", "organization_skill:read", "mcp_server:read"}),
        "nav_skills": site_owner or "organization_skill:read" in perms,
        "nav_mcp": site_owner or "mcp_server:read" in perms,
        "nav_org_admin": site_owner or ORGANIZATION_READ in perms,
        "nav_audit": site_owner or "audit_log:read" in perms,
        "nav_site_owner": site_owner,
    }
