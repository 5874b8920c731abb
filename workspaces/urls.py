from django.urls import path

from . import views

urlpatterns = [
    path("workspaces/", views.workspaces, name="workspaces"),
    path("workspaces/<int:workspace_id>/", views.workspace, name="workspace"),
    path("workspaces/<int:workspace_id>/token", views.workspace_rotate_token, name="workspace-token"),
    path("workspaces/<int:workspace_id>/delete", views.workspace_delete, name="workspace-delete"),
]
