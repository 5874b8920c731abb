"""Redact the secrets that ``.mcp.json`` server entries stored before ``workspaces.services._redact_mcp`` existed
(or before it covered userinfo, ``args`` and non-object values) still hold in ``SnapshotResource.data``.

The redaction below is a frozen copy of ``_redact_mcp`` as of this migration, so that later changes to the service
cannot change what this migration does. It is idempotent: rows already redacted are left untouched.
"""

import re
from urllib.parse import urlsplit, urlunsplit

from django.db import migrations

REDACTED = "[redacted]"
AUTHORITY = re.compile(r"(?:[A-Za-z][A-Za-z0-9+.-]*:)?//(?P<netloc>[^/?#]*)")
BATCH_SIZE = 500


def redact_arg(arg):
    if isinstance(arg, str) and arg.startswith("-"):
        flag, equals, _ = arg.partition("=")
        return f"{flag}={REDACTED}" if equals else arg
    return REDACTED


def redact_url(url):
    if not isinstance(url, str):
        return REDACTED
    authority = AUTHORITY.match(url)
    userinfo = authority is not None and "@" in authority["netloc"]
    if userinfo:
        url = url[: authority.start("netloc")] + authority["netloc"].rsplit("@", 1)[1] + url[authority.end("netloc") :]
    try:
        parts = urlsplit(url)
    except ValueError:
        return REDACTED
    if not parts.netloc or "@" in parts.netloc:
        return REDACTED
    netloc = f"{REDACTED}@{parts.netloc}" if userinfo else parts.netloc
    return urlunsplit((parts.scheme, netloc, parts.path, REDACTED if parts.query else "", ""))


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
        ("workspaces", "0001_initial"),
    ]

    operations = [
        migrations.RunPython(redact_stored_mcp_entries, reverse_code=migrations.RunPython.noop),
    ]
