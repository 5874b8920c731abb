from django.core.management.base import BaseCommand
from django.db import transaction

from organizations import services
from organizations.models import Membership, Organization, Role, User
from organizations.signals import demo_seeded

DEMO_PASSWORD = "switchboard-demo"

ORGANIZATIONS = [("acme", "Acme Labs"), ("globex", "Globex Corporation")]

# username, full name, site owner, {organization: role}
PEOPLE = [
    ("owner", "Olivia Owner", True, {}),
    ("alice", "Alice Admin", False, {"acme": Role.ADMIN}),
    ("audrey", "Audrey Auditor", False, {"acme": Role.AUDITOR}),
    ("bob", "Bob Member", False, {"acme": Role.MEMBER}),
    ("carol", "Carol Member", False, {"globex": Role.MEMBER}),
    ("dave", "Dave Both", False, {"acme": Role.MEMBER, "globex": Role.MEMBER}),
    ("gina", "Gina Globex-Admin", False, {"globex": Role.ADMIN}),
]


class Command(BaseCommand):
    help = "Create the demo organizations and people (idempotent). Development only: prints the passwords."

    def handle(self, *args, **options):
        with transaction.atomic():
            orgs = {}
            people = {}
            for name, display in ORGANIZATIONS:
                org = Organization.objects.filter(name=name).first()
                orgs[name] = org or services.organization_create(actor=None, name=name, display_name=display)
            for username, full_name, site_owner, roles in PEOPLE:
                user = User.objects.filter(username=username).first()
                if user is None:
                    first, last = full_name.split(" ", 1)
                    user = User.objects.create_user(
                        username=username,
                        email=f"{username}@example.com",
                        password=DEMO_PASSWORD,
                        first_name=first,
                        last_name=last,
                        is_superuser=site_owner,
                        is_staff=site_owner,
                    )
                people[username] = user
                for org_name, role in roles.items():
                    if not Membership.objects.filter(user=user, organization=orgs[org_name]).exists():
                        services.membership_add(actor=None, organization=orgs[org_name], user=user, role=role)
            demo_seeded.send(sender=self.__class__, organizations=orgs, people=people)
        self.stdout.write("Demo sign-ins (development only), password for all: " + DEMO_PASSWORD)
        for username, _, site_owner, roles in PEOPLE:
            what = "site owner" if site_owner else ", ".join(f"{r} of {o}" for o, r in roles.items())
            self.stdout.write(f"  {username:<8} {what}")
