from django.apps import AppConfig


class McpserversConfig(AppConfig):
    name = "mcpservers"
    default_auto_field = "django.db.models.BigAutoField"
