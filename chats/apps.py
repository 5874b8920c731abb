from django.apps import AppConfig


class ChatsConfig(AppConfig):
    name = "chats"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from workspaces.signals import snapshot_pushed

        from .pinning import on_snapshot_pushed

        snapshot_pushed.connect(on_snapshot_pushed, dispatch_uid="chats-follow-snapshots")
