"""Redact what ``.mcp.json`` server entries stored under ``workspaces.0002_redact_mcp_secrets``'s rules may still hold
in ``SnapshotResource.data``: a key in the URL path (``https://mcp.zapier.com/api/mcp/s/KEY/mcp``), a value attached to
a short flag (``-pS3cret``), and the part of a password after a "/" (``https://user:pa/ss@host/``), which was taken
for the host and path.

The redaction below is a frozen copy of ``workspaces.services._redact_mcp`` as of this migration, so that later
changes to the service cannot change what this migration does. It is idempotent: rows already redacted are left
untouched, and rows redacted by 0002 end as the service now stores them.
"""

import re
from urllib.parse import urlsplit, urlunsplit

from django.db import migrations

REDACTED = "[redacted]"
URL_START = re.compile(r"(?:[A-Za-z][A-Za-z0-9+.-]*:)?//")
FLAG = re.compile(r"--[A-Za-z][A-Za-z0-9_-]*|-[A-Za-z]")
BATCH_SIZE = 500


def redact_arg(arg):
    if not isinstance(arg, str):
        return REDACTED
    if FLAG.fullmatch(arg):
        return arg
    flag, equals, _ = arg.partition("=")
    return f"{flag}={REDACTED}" if equals and FLAG.fullmatch(flag) else REDACTED


def redact_url(url):
    if not isinstance(url, str):
        return REDACTED
    head_end = min((i for i in (url.find("?"), url.find("#")) if i >= 0), default=len(url))
    userinfo = "@" in url[:head_end]
    if userinfo:
        start = URL_START.match(url)
        if start is None:
            return REDACTED
        at = url.rindex("@", 0, head_end)
        if "/" in url[start.end() : at]:
            return REDACTED
        url = url[: start.end()] + url[at + 1 :]
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 -- raises ValueError for a port that is not a number from 0 to 65535
    except ValueError:
        return REDACTED
    if not parts.hostname:
        return REDACTED
    netloc = f"{REDACTED}@{parts.netloc}" if userinfo else parts.netloc
    path = f"/{REDACTED}" if parts.path not in ("", "/") else parts.path
    return urlunsplit((parts.scheme, netloc, path, REDACTED if parts.query else "", ""))


def redact_mcp(mcp):
    if not isinstance(mcp, dict) or "config" not in mcp:
        return mcp
    if not isinstance(mcp["config"], dict):
        return {**mcp, "config": REDACTED}
    config = dict(mcp["config"])
    for key in ("env", "headers"):
        if key in config:
            value = config[key]
            config[key] = dict.fromkeys(value, REDACTED) if isinstance(value, dict) else REDACTED
    if "args" in config:
        args = config["args"]
        config["args"] = [redact_arg(arg) for arg in args] if isinstance(args, list) else REDACTED
    if "url" in config:
        config["url"] = redact_url(config["url"])
    for key in config:
        if key not in ("type", "command", "args", "env", "url", "headers"):
            config[key] = REDACTED
    return {**mcp, "config": config}


def redact_stored_mcp_entries(apps, schema_editor):
    SnapshotResource = apps.get_model("workspaces", "SnapshotResource")
    rows = SnapshotResource.objects.filter(kind="mcp_server").only("pk", "data").order_by("pk")
    changed = []
    # Writing while iterating is safe here: only ``data`` changes, never the pk the rows are read in order of, and
    # a row read twice would be redacted to the same value again.
    for row in rows.iterator(chunk_size=BATCH_SIZE):
        if not isinstance(row.data, dict) or "mcp" not in row.data:
            continue
        redacted = redact_mcp(row.data["mcp"])
        if redacted != row.data["mcp"]:
            row.data = {**row.data, "mcp": redacted}
            changed.append(row)
        if len(changed) >= BATCH_SIZE:
            SnapshotResource.objects.bulk_update(changed, ["data"])
            changed = []
    if changed:
        SnapshotResource.objects.bulk_update(changed, ["data"])


class Migration(migrations.Migration):

    dependencies = [
        ("workspaces", "0002_redact_mcp_secrets"),
    ]

    operations = [
        migrations.RunPython(redact_stored_mcp_entries, reverse_code=migrations.RunPython.noop),
    ]
