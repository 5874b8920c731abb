"""The workspace agent's scanner: a pure function from a directory tree to a context snapshot, with no Django import.

``roots_for`` lists the scan roots (the working directory, ``~/.coder``, ``~/.coder/skills``,
``~/.claude/plugins/cache`` and every declared source); ``scan`` reads them into a JSON-serialisable dict whose
``resources`` are the instruction files, skills and MCP server entries found, each with a status
(``ok``, ``oversize``, ``excluded``, ``invalid`` or ``shadowed``) and, for readable instruction and skill files, their
text; ``read_supporting_file`` serves ``read_skill_file``.

Discovery is shallow: instruction files and ``.mcp.json`` only at the top of a root, skills only as the immediate
child directories of the fixed containers. Nothing is followed out of its root, nothing is dropped silently (a
symlink that leaves its root is listed as ``excluded``), and identical trees give identical snapshots.
"""

from __future__ import annotations

import codecs
import hashlib
import json
import os
import stat
from dataclasses import dataclass

from skills.format import OVERSIZE_MESSAGE, check_relative_path, parse_skill

MAX_FILE_BYTES = 64 * 1024  # per file resource: bigger → status "oversize", content None
MAX_SNAPSHOT_BYTES = 2 * 1024 * 1024  # total content bytes: resources past it → "excluded", content None
MAX_RESOURCES = 500  # resources past it → "excluded", content None (MCP server entries count)
MAX_SUPPORTING_FILE_BYTES = 512 * 1024
INSTRUCTION_FILES = ("AGENTS.md", "CLAUDE.md", ".cursorrules")
SKILL_CONTAINERS = ("skills", ".agents/skills", ".claude/skills", ".codex/skills")
MCP_CONFIG_FILE = ".mcp.json"
SKILL_FILE = "SKILL.md"

MAX_LISTED_FILES = 200  # supporting files listed per skill (the first ones in sorted order)
MAX_WALKED_ENTRIES = 10_000  # directory entries looked at per skill while listing its supporting files
MAX_INVENTORY = 5000  # resources listed in one snapshot at all; past it the scan stops and totals.truncated is set

ROOT_KINDS = ("workdir", "home_coder", "home_coder_skills", "claude_plugins", "source")
RESOURCE_KINDS = ("instruction", "skill", "mcp_server", "mcp_config")
STATUSES = ("ok", "oversize", "excluded", "invalid", "shadowed")
MCP_TRANSPORTS = ("stdio", "http", "sse")

SYMLINK_MESSAGE = "symlink leaves the scan root"
RESOURCE_CAP_MESSAGE = f"excluded: a snapshot holds at most {MAX_RESOURCES} resources"
CONTENT_CAP_MESSAGE = "excluded: a snapshot holds at most 2 MiB of file content"
FILE_OVERSIZE_MESSAGE = "{name} is larger than 64 KiB"
SHADOWED_MESSAGE = "shadowed by {path}"

PATH_LEAVES_MESSAGE = "path leaves the skill directory"
FILE_NOT_FOUND_MESSAGE = "file not found"
FILE_UNREADABLE_MESSAGE = "file could not be read"


@dataclass(frozen=True)
class Root:
    path: str  # absolute
    kind: str  # "workdir" | "home_coder" | "home_coder_skills" | "claude_plugins" | "source"


# Roots ---------------------------------------------------------------------------------------------------------------


def roots_for(workdir: str, home: str | None, sources: list[str]) -> list[Root]:
    """The scan roots, in scan order: the working directory, ``<home>/.coder``, ``<home>/.coder/skills``,
    ``<home>/.claude/plugins/cache``, then each declared source.

    Only roots that exist as directories are returned; of roots that resolve to the same directory the first is kept.
    A relative source is taken relative to the working directory, and a source starting with ``~/`` relative to home.
    """
    workdir_abs = os.path.abspath(workdir) if workdir else ""
    candidates: list[tuple[str, str]] = [(workdir_abs, "workdir")]
    if home:
        home_abs = os.path.abspath(home)
        candidates += [
            (os.path.join(home_abs, ".coder"), "home_coder"),
            (os.path.join(home_abs, ".coder", "skills"), "home_coder_skills"),
            (os.path.join(home_abs, ".claude", "plugins", "cache"), "claude_plugins"),
        ]
    for source in sources or []:
        if not isinstance(source, str) or not source:
            continue
        if home and (source == "~" or source.startswith("~/")):
            source = os.path.join(os.path.abspath(home), source[2:])
        elif not os.path.isabs(source):
            if not workdir_abs:
                continue
            source = os.path.join(workdir_abs, source)
        candidates.append((os.path.abspath(source), "source"))
    return _unique_roots(Root(path, kind) for path, kind in candidates if path)


def _unique_roots(roots) -> list[Root]:
    result: list[Root] = []
    seen: set[str] = set()
    for root in roots:
        if not os.path.isdir(root.path):
            continue
        real = os.path.realpath(root.path)
        if real in seen:
            continue
        seen.add(real)
        result.append(root)
    return result


# Scanning ------------------------------------------------------------------------------------------------------------


class _Inventory:
    """The resources found so far, in scan order, and the skill directories already reported."""

    def __init__(self) -> None:
        self.resources: list[dict] = []
        self.skill_dirs: set[str] = set()
        self.truncated = False

    def add(self, resource: dict) -> None:
        """Keep the resource, or (past MAX_INVENTORY) drop it and mark the scan truncated, which stops it."""
        if len(self.resources) >= MAX_INVENTORY:
            self.truncated = True
        else:
            self.resources.append(resource)


def scan(roots: list[Root]) -> dict:
    """Scan the roots (in order) into a snapshot: ``{"resources": [...], "totals": {...}, "caps": {...}, ...}``.

    Resources come in a fixed order: roots in order; within a root the instruction files in ``INSTRUCTION_FILES``
    order, then the ``.mcp.json`` server entries in file order, then the skills by container order and directory
    name. Shadowing (a later ok skill with a name already taken) and then the caps are applied in that order."""
    roots = _unique_roots(roots)
    home_skill_roots = {os.path.realpath(root.path) for root in roots if root.kind == "home_coder_skills"}
    inventory = _Inventory()
    for root in roots:
        _scan_root(root, os.path.realpath(root.path), home_skill_roots, inventory)
    resources = inventory.resources
    _apply_shadowing(resources)
    content_bytes = _apply_caps(resources)
    by_status = {status: 0 for status in STATUSES}
    for resource in resources:
        by_status[resource["status"]] += 1
    return {
        "resources": resources,
        "totals": {
            "resources": len(resources),
            "content_bytes": content_bytes,
            "by_status": by_status,
            "truncated": inventory.truncated,
        },
        "caps": {
            "file_bytes": MAX_FILE_BYTES,
            "snapshot_bytes": MAX_SNAPSHOT_BYTES,
            "resources": MAX_RESOURCES,
            "supporting_file_bytes": MAX_SUPPORTING_FILE_BYTES,
        },
        "roots": [{"path": root.path, "kind": root.kind} for root in roots],
    }


def _scan_root(root: Root, root_real: str, home_skill_roots: set[str], inventory: _Inventory) -> None:
    for name in INSTRUCTION_FILES:
        if inventory.truncated:
            return
        resource = _instruction(root, root_real, name)
        if resource is not None:
            inventory.add(resource)
    for resource in _mcp(root, root_real):
        inventory.add(resource)
    containers = ("",) if root.kind == "home_coder_skills" else SKILL_CONTAINERS
    for container in containers:
        if inventory.truncated:
            return
        _scan_container(root, root_real, container, home_skill_roots, inventory)


def _resource(kind: str, root: Root, path: str, **fields) -> dict:
    resource = {
        "kind": kind,
        "root": root.path,
        "root_kind": root.kind,
        "path": path,
        "rel_path": os.path.relpath(path, root.path),
        "status": "ok",
        "error": "",
        "size": 0,
        "sha256": "",
        "content": None,
    }
    resource.update(fields)
    return resource


def _inside(real: str, base_real: str) -> bool:
    try:
        return os.path.commonpath([real, base_real]) == base_real
    except ValueError:
        return False


def _locate(root_real: str, path: str) -> tuple[str, str]:
    """Where ``path`` (a path under the root) leads: ("missing", ""), ("leaves", real) when it resolves outside the
    root (a symlink somewhere on the way), or ("ok", real)."""
    if not os.path.lexists(path):
        return "missing", ""
    real = os.path.realpath(path)
    if not _inside(real, root_real):
        return "leaves", real
    if not os.path.exists(real):
        return "missing", ""
    return "ok", real


class _Unreadable(Exception):
    pass


def _read_regular(real: str, limit: int) -> tuple[int, bytes | None]:
    """(size, bytes) of a regular file, or (size, None) when it is larger than ``limit`` (then it is not read).
    Raises _Unreadable when the path is not a regular file or cannot be read."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(real, flags)
    except OSError as exc:
        raise _Unreadable(exc.strerror or "cannot be opened") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _Unreadable("not a regular file")
        if info.st_size > limit:
            return info.st_size, None
        chunks: list[bytes] = []
        remaining = limit + 1
        while remaining > 0:
            chunk = os.read(fd, min(remaining, 1024 * 1024))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        data = b"".join(chunks)
        if len(data) > limit:  # the file grew while it was read
            return max(len(data), info.st_size), None
        return len(data), data
    except OSError as exc:
        raise _Unreadable(exc.strerror or "cannot be read") from None
    finally:
        os.close(fd)


def _is_regular_file(real: str) -> bool:
    try:
        return stat.S_ISREG(os.stat(real).st_mode)
    except OSError:
        return False


def _instruction(root: Root, root_real: str, name: str) -> dict | None:
    path = os.path.join(root.path, name)
    where, real = _locate(root_real, path)
    if where == "missing":
        return None
    if where == "leaves":
        return _resource("instruction", root, path, status="excluded", error=SYMLINK_MESSAGE)
    if not _is_regular_file(real):
        return None
    try:
        size, data = _read_regular(real, MAX_FILE_BYTES)
    except _Unreadable as exc:
        return _resource("instruction", root, path, status="invalid", error=f"{name} could not be read: {exc}")
    if data is None:
        error = FILE_OVERSIZE_MESSAGE.format(name=name)
        return _resource("instruction", root, path, status="oversize", error=error, size=size)
    digest = hashlib.sha256(data).hexdigest()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        error = f"{name} is not valid UTF-8 text (byte {exc.start} cannot be decoded)"
        return _resource("instruction", root, path, status="invalid", error=error, size=size, sha256=digest)
    if "\x00" in text:
        error = f"{name} contains a NUL character, which text files cannot hold"
        return _resource("instruction", root, path, status="invalid", error=error, size=size, sha256=digest)
    return _resource("instruction", root, path, size=size, sha256=digest, content=text)


# MCP -----------------------------------------------------------------------------------------------------------------


class _BadJson(ValueError):
    pass


def _refuse_constant(value: str):
    raise _BadJson(f"{value} is not allowed")


def _no_duplicates(pairs: list[tuple[str, object]]) -> dict:
    result: dict = {}
    for key, value in pairs:
        if key in result:
            raise _BadJson(f"duplicate key '{key}'")
        result[key] = value
    return result


def _load_mcp_servers(data: bytes) -> tuple[list[tuple[str, object]], str]:
    """The ``mcpServers`` entries of a .mcp.json in file order, or ([], error)."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return [], f".mcp.json is not valid UTF-8 text (byte {exc.start} cannot be decoded)"
    try:
        document = json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_refuse_constant)
    except json.JSONDecodeError as exc:
        return [], f".mcp.json is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
    except _BadJson as exc:
        return [], f".mcp.json is not valid JSON: {exc}"
    except (ValueError, RecursionError):
        return [], ".mcp.json is not valid JSON: it is nested too deeply or holds a value that cannot be read"
    if not isinstance(document, dict):
        return [], ".mcp.json must be a JSON object"
    servers = document.get("mcpServers")
    if not isinstance(servers, dict):
        return [], ".mcp.json must have an 'mcpServers' object"
    return list(servers.items()), ""


def _is_string_map(value: object) -> bool:
    return isinstance(value, dict) and all(isinstance(item, str) for item in value.values())


def _check_mcp_entry(name: str, entry: object) -> tuple[str, str]:
    """(transport, error) for one server entry; the transport is "" when it cannot be told."""
    if not name.strip():
        return "", "server name must not be empty"
    if not isinstance(entry, dict):
        return "", f"server '{name}': the entry must be a JSON object"
    declared = entry.get("type")
    if declared is not None:
        if declared not in MCP_TRANSPORTS:
            return "", f"server '{name}': unknown type {json.dumps(declared)}: use stdio, http or sse"
        transport = declared
    elif "command" in entry:
        transport = "stdio"
    elif "url" in entry:
        transport = "http"
    else:
        return "", f"server '{name}': set 'command' (stdio) or 'url' (http)"
    if transport == "stdio":
        command = entry.get("command")
        if not isinstance(command, str) or not command.strip():
            return transport, f"server '{name}': 'command' must be a non-empty string"
        args = entry.get("args", [])
        if not isinstance(args, list) or not all(isinstance(arg, str) for arg in args):
            return transport, f"server '{name}': 'args' must be a list of strings"
        if not _is_string_map(entry.get("env", {})):
            return transport, f"server '{name}': 'env' must be an object of strings"
    else:
        url = entry.get("url")
        if not isinstance(url, str) or not url.strip():
            return transport, f"server '{name}': 'url' must be a non-empty string"
        if not _is_string_map(entry.get("headers", {})):
            return transport, f"server '{name}': 'headers' must be an object of strings"
    return transport, ""


def _mcp(root: Root, root_real: str) -> list[dict]:
    path = os.path.join(root.path, MCP_CONFIG_FILE)
    where, real = _locate(root_real, path)
    if where == "missing":
        return []
    if where == "leaves":
        return [_resource("mcp_config", root, path, status="excluded", error=SYMLINK_MESSAGE)]
    if not _is_regular_file(real):
        return []
    try:
        size, data = _read_regular(real, MAX_FILE_BYTES)
    except _Unreadable as exc:
        return [_resource("mcp_config", root, path, status="invalid", error=f".mcp.json could not be read: {exc}")]
    if data is None:
        error = FILE_OVERSIZE_MESSAGE.format(name=MCP_CONFIG_FILE)
        return [_resource("mcp_config", root, path, status="oversize", error=error, size=size)]
    digest = hashlib.sha256(data).hexdigest()
    servers, error = _load_mcp_servers(data)
    if error:
        return [_resource("mcp_config", root, path, status="invalid", error=error, size=size, sha256=digest)]
    resources = []
    for name, entry in servers:
        transport, error = _check_mcp_entry(name, entry)
        mcp = {
            "name": name,
            "transport": transport,
            "config": entry,
            "connect": root.kind == "workdir" and not error,
        }
        status = "invalid" if error else "ok"
        resources.append(
            _resource("mcp_server", root, path, status=status, error=error, size=size, sha256=digest, mcp=mcp)
        )
    return resources


# Skills --------------------------------------------------------------------------------------------------------------


def _skill_fields(name: str, directory: str, **fields) -> dict:
    skill = {
        "name": name,
        "description": "",
        "dir": directory,
        "body": None,
        "files": [],
        "files_truncated": False,
        "warnings": [],
    }
    skill.update(fields)
    return skill


def _safe_name(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # a file name that is not UTF-8: it can be no skill, and JSON cannot carry it
        return False
    return True


def _scan_container(
    root: Root, root_real: str, container: str, home_skill_roots: set[str], inventory: _Inventory
) -> None:
    container_path = os.path.join(root.path, container) if container else root.path
    if container:
        where, container_real = _locate(root_real, container_path)
        if where == "missing":
            return
        if root.kind != "home_coder_skills" and container_real in home_skill_roots:
            return  # ~/.coder/skills is a scan root of its own: its skills are reported there
        if where == "leaves":
            if os.path.isdir(container_real):
                skill = _skill_fields("", container_path, dir=None)  # never readable: it leaves the root
                inventory.add(
                    _resource("skill", root, container_path, status="excluded", error=SYMLINK_MESSAGE, skill=skill)
                )
            return
    else:
        container_real = root_real
    if not os.path.isdir(container_real):
        return
    try:
        names = sorted(name for name in os.listdir(container_real) if _safe_name(name))
    except OSError:
        return
    for name in names:
        if inventory.truncated:
            return
        resource = _skill(root, root_real, os.path.join(container_path, name), name, inventory.skill_dirs)
        if resource is not None:
            inventory.add(resource)


def _skill(root: Root, root_real: str, directory: str, name: str, seen_dirs: set[str]) -> dict | None:
    skill_md = os.path.join(directory, SKILL_FILE)
    where, directory_real = _locate(root_real, directory)
    if where == "missing":
        return None
    if where == "leaves":
        if not os.path.isdir(directory_real):
            return None
        skill = _skill_fields(name, directory, dir=None)  # never readable: it leaves the root
        return _resource("skill", root, skill_md, status="excluded", error=SYMLINK_MESSAGE, skill=skill)
    if not os.path.isdir(directory_real) or directory_real in seen_dirs:
        return None
    where, skill_md_real = _locate(root_real, skill_md)
    if where == "missing" or (where == "ok" and not _is_regular_file(skill_md_real)):
        return None  # a directory without SKILL.md is not a skill
    seen_dirs.add(directory_real)
    if where == "leaves":
        skill = _skill_fields(name, directory, dir=None)  # never readable: it leaves the root
        return _resource("skill", root, skill_md, status="excluded", error=SYMLINK_MESSAGE, skill=skill)
    files, truncated = _list_files(directory_real)
    skill = _skill_fields(name, directory, files=files, files_truncated=truncated)
    try:
        size, data = _read_regular(skill_md_real, MAX_FILE_BYTES)
    except _Unreadable as exc:
        error = f"SKILL.md could not be read: {exc}"
        return _resource("skill", root, skill_md, status="invalid", error=error, skill=skill)
    if data is None:
        return _resource("skill", root, skill_md, status="oversize", error=OVERSIZE_MESSAGE, size=size, skill=skill)
    digest = hashlib.sha256(data).hexdigest()
    parsed = parse_skill(data, directory_name=name)
    skill["description"] = parsed.description if isinstance(parsed.description, str) else ""
    skill["warnings"] = [issue.message for issue in parsed.warnings]
    if not parsed.ok:
        error = "; ".join(issue.message for issue in parsed.errors)
        return _resource("skill", root, skill_md, status="invalid", error=error, size=size, sha256=digest, skill=skill)
    skill["body"] = parsed.body
    content = data.decode("utf-8")
    return _resource("skill", root, skill_md, size=size, sha256=digest, content=content, skill=skill)


def _list_files(directory_real: str) -> tuple[list[dict], bool]:
    """The supporting files of a skill: regular files anywhere below its directory except SKILL.md, with no hidden
    component, whose path ``read_skill_file`` accepts, and not through a symlink that leaves the directory (symlinked
    directories are not descended into). Sorted by path; at most MAX_LISTED_FILES. Returns (files, truncated)."""
    found: list[dict] = []
    walked = 0
    truncated = False
    for current, dirnames, filenames in os.walk(directory_real):
        kept = []
        for dirname in sorted(dirnames):
            walked += 1
            if dirname.startswith(".") or not _safe_name(dirname):
                continue
            if os.path.islink(os.path.join(current, dirname)):
                continue
            kept.append(dirname)
        dirnames[:] = kept
        for filename in sorted(filenames):
            walked += 1
            if walked > MAX_WALKED_ENTRIES:
                truncated = True
                break
            if not _safe_name(filename):
                continue
            full = os.path.join(current, filename)
            rel = os.path.relpath(full, directory_real).replace(os.sep, "/")
            if rel == SKILL_FILE or check_relative_path(rel) is not None:
                continue
            if os.path.islink(full) and not _inside(os.path.realpath(full), directory_real):
                continue
            try:
                info = os.stat(full)
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode):
                found.append({"path": rel, "size": info.st_size})
        if truncated:
            break
    found.sort(key=lambda item: item["path"])
    if len(found) > MAX_LISTED_FILES:
        found, truncated = found[:MAX_LISTED_FILES], True
    return found, truncated


# Shadowing and caps --------------------------------------------------------------------------------------------------


def _apply_shadowing(resources: list[dict]) -> None:
    """Of ok skills with the same name, the first (in scan order) wins; the others become ``shadowed``."""
    owners: dict[str, str] = {}
    for resource in resources:
        if resource["kind"] != "skill" or resource["status"] != "ok":
            continue
        name = resource["skill"]["name"]
        if name in owners:
            resource.update(status="shadowed", error=SHADOWED_MESSAGE.format(path=owners[name]), content=None)
            resource["skill"]["body"] = None
        else:
            owners[name] = resource["path"]


def _exclude(resource: dict, message: str) -> None:
    resource.update(status="excluded", error=message, content=None)
    if "skill" in resource:
        resource["skill"]["body"] = None
    if "mcp" in resource:
        resource["mcp"]["connect"] = False


def _apply_caps(resources: list[dict]) -> int:
    """Exclude every resource past the 500th, then any resource whose content would take the total over 2 MiB (a
    smaller one after it may still fit). Returns the content bytes kept."""
    total = 0
    for index, resource in enumerate(resources):
        if index >= MAX_RESOURCES:
            _exclude(resource, RESOURCE_CAP_MESSAGE)
            continue
        if resource["content"] is None:
            continue
        size = len(resource["content"].encode("utf-8"))
        if total + size > MAX_SNAPSHOT_BYTES:
            _exclude(resource, CONTENT_CAP_MESSAGE)
        else:
            total += size
    return total


# read_skill_file -----------------------------------------------------------------------------------------------------


def read_supporting_file(skill_dir: str, path: str) -> dict:
    """One supporting file of the skill in ``skill_dir``, for ``read_skill_file``.

    ``{"ok": False, "error": message}`` for a path the format refuses (``check_relative_path``'s message), one that
    leads out of the skill directory (through a symlink), or a file that does not exist; otherwise
    ``{"ok": True, "content": text, "size": bytes on disk, "truncated": bool}``, the text cut at 512 KiB."""
    error = check_relative_path(path)
    if error:
        return {"ok": False, "error": error}
    if not isinstance(skill_dir, str) or not skill_dir or not os.path.isdir(skill_dir):
        return {"ok": False, "error": FILE_NOT_FOUND_MESSAGE}
    directory_real = os.path.realpath(skill_dir)
    full = os.path.join(skill_dir, *path.split("/"))
    if not os.path.lexists(full):
        return {"ok": False, "error": FILE_NOT_FOUND_MESSAGE}
    real = os.path.realpath(full)
    if not _inside(real, directory_real):
        return {"ok": False, "error": PATH_LEAVES_MESSAGE}
    if not _is_regular_file(real):
        return {"ok": False, "error": FILE_NOT_FOUND_MESSAGE}
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(real, flags)
    except FileNotFoundError:
        return {"ok": False, "error": FILE_NOT_FOUND_MESSAGE}
    except OSError:
        return {"ok": False, "error": FILE_UNREADABLE_MESSAGE}
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return {"ok": False, "error": FILE_NOT_FOUND_MESSAGE}
        chunks: list[bytes] = []
        remaining = MAX_SUPPORTING_FILE_BYTES + 1
        while remaining > 0:
            chunk = os.read(fd, min(remaining, 1024 * 1024))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
    except OSError:
        return {"ok": False, "error": FILE_UNREADABLE_MESSAGE}
    finally:
        os.close(fd)
    data = b"".join(chunks)
    truncated = len(data) > MAX_SUPPORTING_FILE_BYTES
    data = data[:MAX_SUPPORTING_FILE_BYTES]
    # A cut inside a multi-byte character drops that character rather than ending in a replacement mark.
    text = codecs.getincrementaldecoder("utf-8")("replace").decode(data, final=not truncated)
    return {"ok": True, "content": text, "size": max(info.st_size, len(data)), "truncated": truncated}
