from django.apps import AppConfig


class SkillsConfig(AppConfig):
    name = "skills"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from organizations.signals import demo_seeded

        from .demo import seed

        demo_seeded.connect(seed, dispatch_uid="skills-demo-seed")
