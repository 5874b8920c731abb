from django.urls import include, path
from django.views.generic import RedirectView

from project.api import api

urlpatterns = [
    path("api/", api.urls),
    path("settings/", RedirectView.as_view(pattern_name="personal-skills"), name="settings"),
    path("", include("organizations.urls")),
    path("", include("skills.urls")),
    path("", include("workspaces.urls")),
    path("", include("mcpservers.urls")),
    path("", include("chats.urls")),
]

handler403 = "project.errors.forbidden"
handler404 = "project.errors.not_found"
handler500 = "project.errors.server_error"
