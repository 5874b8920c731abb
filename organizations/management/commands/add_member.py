from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from organizations import services
from organizations.models import Organization, Role, User


class Command(BaseCommand):
    help = "Add an existing user to an organization with a role."

    def add_arguments(self, parser):
        parser.add_argument("organization")
        parser.add_argument("username")
        parser.add_argument("--role", choices=Role.values, default=Role.MEMBER)

    def handle(self, *args, organization, username, role, **options):
        org = Organization.objects.filter(name=organization).first()
        if org is None:
            raise CommandError(f"No organization named {organization}.")
        user = User.objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No user named {username}.")
        try:
            services.membership_add(actor=None, organization=org, user=user, role=role)
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from None
        self.stdout.write(f"Added {username} to {org.name} as {role}.")
