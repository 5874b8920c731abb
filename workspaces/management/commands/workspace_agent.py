"""``manage.py workspace_agent``: the workspace agent (``python -m workspaces.agent``) with the same options."""

import sys

from django.core.management.base import BaseCommand

from workspaces import agent


class Command(BaseCommand):
    help = (
        "Run the workspace agent: scan a workspace, push its context snapshots to the server and answer the "
        "server's requests for skill files. The same as python -m workspaces.agent."
    )
    requires_system_checks = []  # the agent talks to the server over HTTP; it needs neither the database nor checks

    def add_arguments(self, parser):
        agent.add_arguments(parser)

    def handle(self, *args, **options):
        code = agent.main(agent.argv_from_options(options))
        if code:
            sys.exit(code)
