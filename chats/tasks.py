from celery import shared_task

from . import loop


@shared_task(acks_late=True)
def run_turn_task(turn_id: int) -> str:
    return loop.run_turn(turn_id)
