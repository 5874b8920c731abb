from django.core.management.base import BaseCommand, CommandError

from organizations import services
from organizations.models import User


class Command(BaseCommand):
    help = "Create a personal API token for a user and print it (it is shown only this once)."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--name", default="command line")

    def handle(self, *args, username, name, **options):
        user = User.objects.filter(username=username, is_active=True).first()
        if user is None:
            raise CommandError(f"No active user named {username}.")
        _, token = services.api_token_create(user=user, name=name)
        self.stdout.write(token)
