from django.dispatch import Signal

# Sent by `manage.py seed_demo` after the demo organizations and people exist, so that other apps can add their
# own demo data without this app knowing about them. Arguments: organizations (name → Organization),
# people (username → User).
demo_seeded = Signal()
