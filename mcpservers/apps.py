from django.apps import AppConfig


class McpserversConfig(AppConfig):
    name = "mcpservers"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from organizations.signals import demo_seeded

        from .demo import seed

        demo_seeded.connect(seed, dispatch_uid="mcpservers-demo-seed")
