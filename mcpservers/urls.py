from django.urls import path

from . import connections, views

urlpatterns = [
    path("settings/mcp-connections/", connections.connections, name="mcp-connections"),
    path(
        "settings/mcp-connections/<int:server_id>/disconnect", connections.disconnect, name="mcp-connection-disconnect"
    ),
    path("ai/settings/mcp-servers", views.server_list, name="mcp-servers"),
    path("ai/settings/mcp-servers/new", views.server_new, name="mcp-server-new"),
    path("ai/settings/mcp-servers/<int:server_id>/edit", views.server_edit, name="mcp-server-edit"),
    path("ai/settings/mcp-servers/<int:server_id>/delete", views.server_delete, name="mcp-server-delete"),
    path("ai/settings/mcp-servers/<int:server_id>/test", views.server_test, name="mcp-server-test"),
    path(
        "ai/settings/mcp-servers/<int:server_id>/permissions", views.server_permissions, name="mcp-server-permissions"
    ),
]
