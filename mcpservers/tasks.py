from celery import shared_task

from . import oauth_services


@shared_task
def refresh_mcp_tokens_task() -> int:
    """Refresh users' OAuth2 tokens shortly before they expire (spread with jitter)."""
    return oauth_services.refresh_expiring()
