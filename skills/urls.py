from django.urls import path

from . import views

urlpatterns = [
    path("settings/skills/", views.personal_skills, name="personal-skills"),
    path("settings/skills/new", views.personal_skill_new, name="personal-skill-new"),
    path("settings/skills/validate", views.skill_validate, name="skill-validate"),
    path("settings/skills/export", views.personal_skills_export, name="personal-skills-export"),
    path("settings/skills/<slug:name>/edit", views.personal_skill_edit, name="personal-skill-edit"),
    path("settings/skills/<slug:name>/enabled", views.personal_skill_enabled, name="personal-skill-enabled"),
    path("settings/skills/<slug:name>/download", views.personal_skill_download, name="personal-skill-download"),
    path("settings/skills/<slug:name>/delete", views.personal_skill_delete, name="personal-skill-delete"),
    path("settings/skills/org/<slug:org>/export", views.shared_skills_export, name="shared-skills-export"),
    path("settings/skills/org/<slug:org>/<slug:name>/view", views.shared_skill_view, name="shared-skill"),
    path(
        "settings/skills/org/<slug:org>/<slug:name>/download",
        views.shared_skill_download,
        name="shared-skill-download",
    ),
    path("ai/settings/skills", views.org_skills, name="org-skills"),
    path("ai/settings/skills/new", views.org_skill_new, name="org-skill-new"),
    path("ai/settings/skills/export", views.org_skills_export, name="org-skills-export"),
    path("ai/settings/skills/<slug:name>/view", views.org_skill_view, name="org-skill"),
    path("ai/settings/skills/<slug:name>/edit", views.org_skill_edit, name="org-skill-edit"),
    path("ai/settings/skills/<slug:name>/enabled", views.org_skill_enabled, name="org-skill-enabled"),
    path("ai/settings/skills/<slug:name>/download", views.org_skill_download, name="org-skill-download"),
    path("ai/settings/skills/<slug:name>/delete", views.org_skill_delete, name="org-skill-delete"),
    path("ai/settings/skills/<slug:name>/permissions", views.org_skill_permissions, name="org-skill-permissions"),
]
