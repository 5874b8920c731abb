"""LLM providers. ``demo`` is built in, offline and needs no key; ``openai`` speaks to any OpenAI-compatible Chat
Completions endpoint through the official SDK, configured by site owners (``ProviderConfig``, key encrypted)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

import openai

from .models import ProviderConfig

DEMO = "demo"
DEMO_LABEL = "Demo (offline, built in)"


class ProviderError(Exception):
    """The provider failed. The message is safe to show: no key, no response body."""


@dataclass
class ProviderToolCall:
    id: str
    name: str
    arguments: dict


@dataclass
class Reply:
    content: str
    tool_calls: list[ProviderToolCall] = field(default_factory=list)


class DemoProvider:
    """Reads a ``/alias`` the user typed with ``read_skill`` and answers from it; otherwise explains what it can do."""

    label = DEMO_LABEL
    ALIAS = re.compile(r"(?:^|\s)/([a-z0-9]+(?:[-/][a-z0-9]+)*)")

    def complete(self, *, messages: list[dict], tools: list[dict], model: str = "") -> Reply:
        last_user = max((i for i, m in enumerate(messages) if m["role"] == "user"), default=None)
        if last_user is None:
            return Reply("Say something, or type / to pick a skill.")
        since = messages[last_user + 1 :]
        tool_results = [m for m in since if m["role"] == "tool"]
        tool_names = {t["function"]["name"] for t in tools}
        if tool_results:
            result = tool_results[-1]["content"]
            called = self._called_name(since, tool_results[-1].get("tool_call_id"))
            if called and called != "read_skill":
                excerpt = result if len(result) <= 1500 else result[:1500] + "…"
                return Reply(f"(Demo provider) The tool **{called}** answered:\n\n{excerpt}")
            try:
                data = json.loads(result)
            except ValueError:
                return Reply(f"(Demo provider) I could not read that skill: {result}")
            body = (data.get("body") or "").strip()
            excerpt = body if len(body) <= 1500 else body[:1500] + "…"
            return Reply(
                f"(Demo provider) I read the skill **{data.get('name')}**. It says:\n\n{excerpt}\n\n"
                "A real model would now follow these instructions; configure one in Admin settings → Providers."
            )
        text = messages[last_user]["content"] or ""
        mcp_call = self._mcp_call(text, tools)
        if mcp_call is not None:
            return Reply("", [mcp_call])
        found = self.ALIAS.search(text)
        if found and "read_skill" in tool_names:
            return Reply("", [ProviderToolCall("demo-read-1", "read_skill", {"name": found.group(1)})])
        catalog = next((m["content"] for m in messages if m["role"] == "system"), "")
        skills = re.findall(r"^- ([^:\n]+):", catalog, flags=re.M)
        if skills:
            listed = ", ".join(f"/{s}" for s in skills[:12])
            return Reply(
                "(Demo provider) I am the built-in offline demo: I can read a skill for you. "
                f"Type / and pick one, for example {listed}."
            )
        return Reply(
            "(Demo provider) I am the built-in offline demo. No skills are available to this chat yet: add a "
            "personal skill in Settings → Skills, or attach a workspace that has some."
        )

    @staticmethod
    def _called_name(messages: list[dict], call_id: str | None) -> str | None:
        for message in messages:
            for call in message.get("tool_calls") or []:
                if call.get("id") == call_id:
                    return call["function"]["name"]
        return None

    @staticmethod
    def _mcp_call(text: str, tools: list[dict]) -> ProviderToolCall | None:
        """``<slug>__<tool>`` in the message calls that MCP tool: with the JSON object that follows it, or with the
        rest of the message as its first required text argument."""
        for tool in tools:
            function = tool["function"]
            name = function["name"]
            if "__" not in name or not re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text):
                continue
            rest = text.split(name, 1)[1].strip()
            arguments: dict = {}
            if rest.startswith("{"):
                try:
                    parsed = json.loads(rest)
                    arguments = parsed if isinstance(parsed, dict) else {}
                except ValueError:
                    arguments = {}
            else:
                schema = function.get("parameters") or {}
                properties = schema.get("properties") or {}
                for key in schema.get("required") or list(properties):
                    if key != "purpose" and properties.get(key, {}).get("type") == "string" and rest:
                        arguments[key] = rest
                        break
            if "purpose" in ((function.get("parameters") or {}).get("properties") or {}):
                arguments["purpose"] = f"Demo: calling {name}"
            return ProviderToolCall("demo-mcp-1", name, arguments)
        return None


class OpenAIProvider:
    def __init__(self, config: ProviderConfig):
        self.config = config
        self.label = config.display_name or config.name

    def complete(self, *, messages: list[dict], tools: list[dict], model: str = "") -> Reply:
        client = openai.OpenAI(
            base_url=self.config.base_url, api_key=str(self.config.api_key or "unused"), timeout=60, max_retries=1
        )
        kwargs = {"model": model or self.config.default_model, "messages": messages}
        if tools:
            kwargs["tools"] = tools
        try:
            completion = client.chat.completions.create(**kwargs)
        except openai.APIStatusError as exc:
            raise ProviderError(f"the model provider answered {exc.status_code}") from None
        except openai.APIError as exc:
            raise ProviderError(f"the model provider could not be reached ({type(exc).__name__})") from None
        if not completion.choices:
            raise ProviderError("the model provider sent an answer without choices")
        message = completion.choices[0].message
        calls = []
        for call in message.tool_calls or []:
            try:
                arguments = json.loads(call.function.arguments or "{}")
            except ValueError:
                arguments = {}
            calls.append(
                ProviderToolCall(call.id, call.function.name, arguments if isinstance(arguments, dict) else {})
            )
        return Reply(message.content or "", calls)


def provider_for(name: str):
    if name == DEMO or not name:
        return DemoProvider()
    config = ProviderConfig.objects.filter(name=name, enabled=True).first()
    if config is None:
        raise ProviderError(f"the provider {name} is not configured or is turned off")
    return OpenAIProvider(config)


def choices() -> list[tuple[str, str]]:
    return [(DEMO, DEMO_LABEL)] + [
        (c.name, c.display_name or c.name) for c in ProviderConfig.objects.filter(enabled=True).order_by("name")
    ]
