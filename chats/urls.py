from django.urls import path

from . import views

urlpatterns = [
    path("agents/", views.agents, name="agents"),
    path("agents/chats/new", views.chat_new, name="chat-new"),
    path("agents/chats/<int:chat_id>/", views.chat, name="chat"),
    path("agents/chats/<int:chat_id>/messages", views.chat_send, name="chat-send"),
    path("agents/chats/<int:chat_id>/interrupt", views.chat_interrupt, name="chat-interrupt"),
    path("agents/chats/<int:chat_id>/context", views.chat_refresh, name="chat-refresh"),
    path("agents/chats/<int:chat_id>/skills", views.chat_skills, name="chat-skills"),
    path("agents/chats/<int:chat_id>/mcp-servers", views.chat_mcp_servers, name="chat-mcp-servers"),
    path("ai/settings/providers", views.providers_page, name="providers"),
]
