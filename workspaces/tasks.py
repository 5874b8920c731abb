from celery import shared_task

from . import services


@shared_task
def mark_unreachable_workspaces_task() -> int:
    return services.mark_unreachable()
