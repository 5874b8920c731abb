"""The tool registry of one chat step. Skill tools are offered only when the step has skills; MCP tools (a later
app) join through ``TOOL_SOURCES``. A tool never raises to the loop: errors come back as results marked as errors,
in words the model and the user can read, and never carry a secret."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field

from workspaces import services as workspace_services

from .context import ChatContext, SkillLookupError
from .models import Chat


@dataclass
class ToolResult:
    content: str
    is_error: bool = False


@dataclass
class Tool:
    name: str
    description: str
    parameters: dict
    handler: Callable[[dict, str], ToolResult]  # (arguments, the model's tool call id)
    label: Callable[[dict], str] = field(default=lambda args: "")

    def spec(self) -> dict:
        """The OpenAI Chat Completions ``tools`` entry."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }


class ToolRegistry:
    def __init__(self, tools: list[Tool]):
        self.tools = {tool.name: tool for tool in tools}

    def specs(self) -> list[dict]:
        return [tool.spec() for tool in self.tools.values()]

    def call(self, name: str, arguments: dict, call_id: str = "") -> ToolResult:
        tool = self.tools.get(name)
        if tool is None:
            return ToolResult(f"unknown tool: {name}", is_error=True)
        try:
            return tool.handler(arguments if isinstance(arguments, dict) else {}, call_id)
        except Exception as exc:  # a tool's own failure is the model's to read, not the loop's to crash on
            return ToolResult(f"{name} failed: {type(exc).__name__}", is_error=True)


def skill_tools(chat: Chat, context: ChatContext) -> list[Tool]:
    """``read_skill`` and ``read_skill_file``, when the step has any skill."""
    if not context.entries:
        return []

    def read_skill(args: dict, call_id: str = "") -> ToolResult:
        try:
            entry = context.lookup(str(args.get("name", "")))
        except SkillLookupError as exc:
            return ToolResult(str(exc), is_error=True)
        result: dict = {"name": context.alias_of(entry), "body": entry.read_body()}
        if entry.source == "workspace":
            result["dir"] = entry.dir
            result["files"] = [f.get("path") for f in entry.files]
        return ToolResult(json.dumps(result, ensure_ascii=False))

    def read_skill_file(args: dict, call_id: str = "") -> ToolResult:
        try:
            entry = context.lookup(str(args.get("name", "")))
        except SkillLookupError as exc:
            return ToolResult(str(exc), is_error=True)
        if entry.source != "workspace":
            return ToolResult("personal and organization skills have no supporting files", is_error=True)
        try:
            answer = workspace_services.read_skill_file(
                workspace=chat.workspace, skill_dir=entry.dir or "", path=str(args.get("path", ""))
            )
        except workspace_services.WorkspaceUnreachable:
            return ToolResult(workspace_services.UNREACHABLE_MESSAGE, is_error=True)
        if not answer.get("ok"):
            return ToolResult(str(answer.get("error") or "file could not be read"), is_error=True)
        content = answer.get("content") or ""
        if answer.get("truncated"):
            content += "\n[truncated at 512 KiB]"
        return ToolResult(content)

    return [
        Tool(
            "read_skill",
            "Read a skill's instructions (the SKILL.md body). For workspace skills also its directory and files.",
            {
                "type": "object",
                "properties": {"name": {"type": "string", "description": "The skill's alias as listed."}},
                "required": ["name"],
            },
            read_skill,
            label=lambda args: f"Reading skill {args.get('name', '')}",
        ),
        Tool(
            "read_skill_file",
            "Read a supporting file of a workspace skill, by its path relative to the skill directory.",
            {
                "type": "object",
                "properties": {"name": {"type": "string"}, "path": {"type": "string"}},
                "required": ["name", "path"],
            },
            read_skill_file,
            label=lambda args: f"Reading {args.get('path', '')} of {args.get('name', '')}",
        ),
    ]


def _mcp_tools(chat: Chat, context: ChatContext) -> list[Tool]:
    from .mcp import mcp_tools

    return mcp_tools(chat, context)


# Each source: (chat, context) → tools.
TOOL_SOURCES: list[Callable[[Chat, ChatContext], list[Tool]]] = [skill_tools, _mcp_tools]


def registry_for(chat: Chat, context: ChatContext) -> ToolRegistry:
    tools: list[Tool] = []
    for source in TOOL_SOURCES:
        tools.extend(source(chat, context))
    return ToolRegistry(tools)
