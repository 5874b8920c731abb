"""The audit context of a request: its client address and user agent."""

from __future__ import annotations

from . import audit


def client_ip(request) -> str | None:
    """The client address. Behind a proxy, configure it to set REMOTE_ADDR (we do not trust X-Forwarded-For)."""
    return request.META.get("REMOTE_ADDR") or None


class AuditContextMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        token = audit.set_request_context(
            audit.RequestContext(
                ip_address=client_ip(request), user_agent=request.META.get("HTTP_USER_AGENT", "")[:512]
            )
        )
        try:
            return self.get_response(request)
        finally:
            audit.reset_request_context(token)
