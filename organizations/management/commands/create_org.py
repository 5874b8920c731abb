from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from organizations import services


class Command(BaseCommand):
    help = "Create an organization (with its Everyone group)."

    def add_arguments(self, parser):
        parser.add_argument("name", help="URL-safe name: lowercase letters, digits, single hyphens")
        parser.add_argument("--display-name", default="", help="Human-readable name (defaults to NAME)")

    def handle(self, *args, name, display_name, **options):
        try:
            organization = services.organization_create(actor=None, name=name, display_name=display_name)
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from None
        self.stdout.write(f"Created organization {organization.name} ({organization.display_name}).")
