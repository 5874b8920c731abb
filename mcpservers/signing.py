"""Coder identity headers and v1 request signing for outgoing MCP requests.

Wire format: mcp-servers.md, "Coder identity headers", "Signature format" and "Verify signatures"; rules.md, MCP
servers, identity headers bullet. Published for MCP server authors in docs/mcp-signing.md, with test vectors in
docs/mcp-signing-vectors.json.

Canonical string (``\\n`` separators, no trailing newline)::

    v1
    <timestamp>
    <METHOD>
    <raw request target: path with leading slash and query string>
    <lowercase hex SHA-256 of the exact body bytes>
    owner=<X-Coder-Owner-Id>
    chat=<X-Coder-Chat-Id>
    subchat=<X-Coder-Subchat-Id>
    workspace=<X-Coder-Workspace-Id>

``X-Coder-Signature`` is ``v1=`` + lowercase hex HMAC-SHA256 of that string, keyed with the UTF-8 bytes of the
secret's *text* (the hex string as configured, not its decoded bytes).

Pure standard library on purpose: no Django import, so MCP server authors can copy ``verify`` as is.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import time
from collections.abc import Mapping

__all__ = [
    "IDENTITY_HEADERS",
    "MAX_SKEW_SECONDS",
    "SIGNATURE_HEADER",
    "SIGNATURE_PREFIX",
    "TIMESTAMP_HEADER",
    "canonical_string",
    "identity_headers",
    "outgoing_headers",
    "sign",
    "verify",
]

OWNER_HEADER = "X-Coder-Owner-Id"
CHAT_HEADER = "X-Coder-Chat-Id"
SUBCHAT_HEADER = "X-Coder-Subchat-Id"
WORKSPACE_HEADER = "X-Coder-Workspace-Id"
IDENTITY_HEADERS = (OWNER_HEADER, CHAT_HEADER, SUBCHAT_HEADER, WORKSPACE_HEADER)
TIMESTAMP_HEADER = "X-Coder-Signature-Timestamp"
SIGNATURE_HEADER = "X-Coder-Signature"
SIGNATURE_PREFIX = "v1="
MAX_SKEW_SECONDS = 300

_VERSION_LINE = "v1"
_SIGNATURE_RE = re.compile(r"v1=[0-9a-f]{64}")
# Canonical decimal form only (ASCII digits, no sign, no leading zeros): the canonical string carries the header's
# text, so a timestamp that ``int()`` would accept but that we would never send ("+17", "017", " 17") is malformed.
_TIMESTAMP_RE = re.compile(r"0|[1-9][0-9]{0,17}")
# HTTP strips optional whitespace around field values, so the value that arrives is the stripped one.
_OWS = " \t"


def _check_line(field: str, value: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{field} must be a str, not {type(value).__name__}")
    if "\n" in value or "\r" in value or "\0" in value:
        # A line break would let one field forge the following lines of the canonical string.
        raise ValueError(f"{field} must not contain CR, LF or NUL")
    return value


def canonical_string(
    *,
    timestamp: int,
    method: str,
    target: str,
    body: bytes,
    owner: str = "",
    chat: str = "",
    subchat: str = "",
    workspace: str = "",
) -> str:
    """The v1 canonical string. Absent identity headers are passed as ``""``; a request without a body as ``b""``.

    ``target`` is the raw request target as sent on the request line: path with its leading slash plus the query
    string (``/mcp?x=1``). ``method`` is upper-cased. Raises ``ValueError`` on values that cannot appear in HTTP
    (CR, LF, NUL), on a negative timestamp and on a target without a leading slash.
    """
    if isinstance(timestamp, bool) or not isinstance(timestamp, int):
        raise TypeError("timestamp must be an int (Unix seconds)")
    if timestamp < 0:
        raise ValueError("timestamp must not be negative")
    method = _check_line("method", method).upper()
    if not method or any(c in method for c in " \t"):
        raise ValueError("method must be a non-empty HTTP token")
    target = _check_line("target", target)
    if not target.startswith("/"):
        raise ValueError("target must be the raw request target starting with '/' (path and query string)")
    body_hash = hashlib.sha256(body if body is not None else b"").hexdigest()
    return "\n".join(
        (
            _VERSION_LINE,
            str(timestamp),
            method,
            target,
            body_hash,
            "owner=" + _check_line("owner", owner),
            "chat=" + _check_line("chat", chat),
            "subchat=" + _check_line("subchat", subchat),
            "workspace=" + _check_line("workspace", workspace),
        )
    )


def sign(secret: str, canonical: str) -> str:
    """``v1=`` + lowercase hex HMAC-SHA256 of ``canonical``, keyed with the UTF-8 bytes of the secret's text."""
    if not isinstance(secret, str) or not secret:
        raise ValueError("signing secret must be a non-empty str")
    digest = hmac.new(secret.encode("utf-8"), canonical.encode("utf-8"), hashlib.sha256).hexdigest()
    return SIGNATURE_PREFIX + digest


def identity_headers(*, owner: str, chat: str, subchat: str | None, workspace: str | None) -> dict[str, str]:
    """The identity headers for one outgoing request.

    ``chat`` is the root chat's id (for a root chat, its own id); ``subchat`` is ``None`` for root chats and
    ``workspace`` is ``None`` without a workspace: those headers are then omitted, not sent empty.
    """
    headers: dict[str, str] = {}
    for name, value, required in (
        (OWNER_HEADER, owner, True),
        (CHAT_HEADER, chat, True),
        (SUBCHAT_HEADER, subchat, False),
        (WORKSPACE_HEADER, workspace, False),
    ):
        text = "" if value is None else _check_line(name, str(value)).strip(_OWS)
        if not text:
            if required:
                raise ValueError(f"{name} needs a value")
            continue
        headers[name] = text
    return headers


def _fold(headers: Mapping[str, str], what: str, *, allow_same: bool = False) -> dict[str, tuple[str, str]]:
    """lower-case name -> (name as given, value).

    ``ValueError`` when one name appears twice case-insensitively (unless ``allow_same`` and the values are equal):
    the receiver would see the header twice, usually joined with a comma, and the signature could not match.
    """
    folded: dict[str, tuple[str, str]] = {}
    for name, value in headers.items():
        key = name.lower()
        if key in folded and not (allow_same and folded[key][1] == value):
            raise ValueError(f"{what} has header {name!r} more than once (names are case-insensitive)")
        folded.setdefault(key, (name, value))
    return folded


def outgoing_headers(
    *,
    base: dict[str, str],
    identity: dict[str, str],
    secret: str | None,
    method: str,
    target: str,
    body: bytes,
    now: int | None = None,
) -> dict[str, str]:
    """The full header dict to send: ``identity``, then the configured auth headers ``base``, then the signature.

    Collision rule (rules.md): an auth header in ``base`` whose name matches an identity header case-insensitively
    wins: the identity header is dropped and the auth value is sent under the auth header's spelling. With a
    ``secret``, the timestamp and signature are added, computed over the *effective* value of each identity header
    name as sent (the auth value on a collision, ``""`` when absent); any ``base`` entry named like the timestamp or
    signature header is then replaced, since a foreign value there could only fail verification. Without a secret
    (``None`` or ``""``, which clears it) nothing is signed and ``base`` passes through as given.

    Pass ``secret`` only when forwarding identity headers is enabled for the server; ``target`` must be the raw
    request target the HTTP client sends (with httpx, ``request.url.raw_path.decode("ascii")``) and ``body`` the
    exact body bytes. Identity-named values are sent stripped of surrounding spaces and tabs, as HTTP delivers them.
    Raises ``ValueError`` when ``base`` or ``identity`` repeats a name case-insensitively with different values.
    """
    base_folded = _fold(base, "auth headers")
    _fold(identity, "identity headers")
    identity_names = {name.lower() for name in IDENTITY_HEADERS}

    headers: dict[str, str] = {}
    for name, value in identity.items():
        if name.lower() not in base_folded:
            headers[name] = value
    signed_names = {TIMESTAMP_HEADER.lower(), SIGNATURE_HEADER.lower()} if secret else set()
    for name, value in base.items():
        if name.lower() not in signed_names:
            headers[name] = value
    for name, value in list(headers.items()):
        if name.lower() in identity_names and isinstance(value, str):
            headers[name] = value.strip(_OWS)

    if not secret:
        return headers

    sent = {name.lower(): value for name, value in headers.items()}
    timestamp = int(time.time()) if now is None else int(now)
    canonical = canonical_string(
        timestamp=timestamp,
        method=method,
        target=target,
        body=body,
        owner=sent.get(OWNER_HEADER.lower(), ""),
        chat=sent.get(CHAT_HEADER.lower(), ""),
        subchat=sent.get(SUBCHAT_HEADER.lower(), ""),
        workspace=sent.get(WORKSPACE_HEADER.lower(), ""),
    )
    headers[TIMESTAMP_HEADER] = str(timestamp)
    headers[SIGNATURE_HEADER] = sign(secret, canonical)
    return headers


def verify(
    *,
    secret: str,
    method: str,
    target: str,
    body: bytes,
    headers: Mapping[str, str],
    now: int | None = None,
) -> tuple[bool, str]:
    """Check a received request's v1 signature; returns ``(ok, reason)``, reason ``"ok"`` on success.

    For MCP server authors. ``body`` is the raw body before JSON parsing, ``target`` the raw request target (path
    with its leading slash and the query string), ``headers`` any mapping of the received headers (looked up
    case-insensitively). Rejects a missing secret, missing or malformed timestamp or signature, a signature
    version other than ``v1=``, a timestamp more than ``MAX_SKEW_SECONDS`` away from ``now`` in either direction,
    and any mismatch; the signature is compared in constant time. Trust the identity headers only when ``ok``.
    """
    if not isinstance(secret, str) or not secret:
        return False, "signing secret is not configured"
    try:
        received = {key: value for key, (_, value) in _fold(headers, "request", allow_same=True).items()}
    except ValueError:
        return False, "a header appears more than once with different values"
    for key in (TIMESTAMP_HEADER.lower(), SIGNATURE_HEADER.lower(), *(name.lower() for name in IDENTITY_HEADERS)):
        value = received.get(key)
        if isinstance(value, bytes | bytearray):
            received[key] = value = bytes(value).decode("latin-1")  # raw ASGI-style header values
        if value is not None and not isinstance(value, str):
            return False, "malformed request headers"

    raw_timestamp = received.get(TIMESTAMP_HEADER.lower())
    if raw_timestamp is None:
        return False, f"missing {TIMESTAMP_HEADER} header"
    raw_timestamp = raw_timestamp.strip(_OWS)
    if not _TIMESTAMP_RE.fullmatch(raw_timestamp):
        return False, f"malformed {TIMESTAMP_HEADER} header"

    signature = received.get(SIGNATURE_HEADER.lower())
    if signature is None:
        return False, f"missing {SIGNATURE_HEADER} header"
    signature = signature.strip(_OWS)
    if not signature.startswith(SIGNATURE_PREFIX):
        return False, f"unsupported {SIGNATURE_HEADER} version (expected {SIGNATURE_PREFIX!r})"
    if not _SIGNATURE_RE.fullmatch(signature):
        return False, f"malformed {SIGNATURE_HEADER} header"

    timestamp = int(raw_timestamp)
    current = int(time.time()) if now is None else int(now)
    if abs(current - timestamp) > MAX_SKEW_SECONDS:
        return False, f"{TIMESTAMP_HEADER} is more than {MAX_SKEW_SECONDS} seconds from the current time"

    try:
        canonical = canonical_string(
            timestamp=timestamp,
            method=method,
            target=target,
            body=body,
            owner=received.get(OWNER_HEADER.lower(), "").strip(_OWS),
            chat=received.get(CHAT_HEADER.lower(), "").strip(_OWS),
            subchat=received.get(SUBCHAT_HEADER.lower(), "").strip(_OWS),
            workspace=received.get(WORKSPACE_HEADER.lower(), "").strip(_OWS),
        )
    except (TypeError, ValueError):
        return False, "malformed request"
    expected = sign(secret, canonical)
    # Both sides are ASCII (the received value matched _SIGNATURE_RE), as hmac.compare_digest requires for str.
    if not hmac.compare_digest(expected.encode("ascii"), signature.encode("ascii")):
        return False, "signature mismatch"
    return True, "ok"
