from django.urls import include, path

from project.api import api

urlpatterns = [
    path("api/", api.urls),
    path("", include("organizations.urls")),
]

handler403 = "project.errors.forbidden"
handler404 = "project.errors.not_found"
handler500 = "project.errors.server_error"
