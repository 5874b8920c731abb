"""Coder identity headers and v1 request signing (mcpservers/signing.py).

mcp-servers.md, "Coder identity headers", "Configure request signing", "Signature format", "Verify signatures";
rules.md, MCP servers, identity headers bullet. The known signatures below and every expected value in
docs/mcp-signing-vectors.json were computed outside this code base (printf + sha256sum + ``openssl dgst -hmac``), so
the module is checked against an independent implementation, and the published vectors cannot drift from it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from mcpservers import signing
from mcpservers.signing import (
    IDENTITY_HEADERS,
    MAX_SKEW_SECONDS,
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    canonical_string,
    identity_headers,
    outgoing_headers,
    sign,
    verify,
)

VECTORS_PATH = Path(__file__).resolve().parents[2] / "docs" / "mcp-signing-vectors.json"

SECRET = "6f1c2b9e4d7a8035f2e1c4b7a9d0e3f6a1b4c7d0e3f6a9b2c5d8e1f4a7b0c3d6"
OWNER = "8d3e7c1a-5b2f-4e9d-a6c0-1f2e3d4c5b6a"
CHAT = "2a9f0e1d-7c6b-4a58-9e3d-2c1b0a9f8e7d"
SUBCHAT = "5e4d3c2b-1a09-4f8e-b7d6-c5b4a3928170"
WORKSPACE = "9c8b7a69-5847-4362-a150-f4e3d2c1b0a9"
TS = 1767225600
BODY = (
    b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"search","arguments":{"q":"release notes"},'
    b'"_meta":{"com.coder/tool_call_id":"call_01"}}}'
)
BODY_SHA256 = "fc4b17fa4300eb9a6a0d9ace91954574d6029689e3eb15404a4160b1dbbf5c00"
EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
# openssl dgst -sha256 -hmac "$SECRET" over the canonical string of the root request below.
KNOWN_SIGNATURE = "v1=b73d3f49d3a369e02e132c6e224ee135d1846cf06f9dae4a7e3e4dae8927fb8e"
# openssl dgst -sha256 -mac HMAC -macopt hexkey:$SECRET over the same string: the WRONG key (decoded bytes).
DECODED_KEY_DIGEST = "40192c032b6ddce184e8d08490fa6e3b8fce08edf450ffd05a76690ff0ba80a2"


def root_canonical(**overrides) -> str:
    fields = {"timestamp": TS, "method": "POST", "target": "/mcp", "body": BODY, "owner": OWNER, "chat": CHAT}
    fields.update(overrides)
    return canonical_string(**fields)


def signed_request(*, secret: str = SECRET, now: int = TS, **identity) -> dict[str, str]:
    ident = identity_headers(
        owner=identity.get("owner", OWNER),
        chat=identity.get("chat", CHAT),
        subchat=identity.get("subchat", SUBCHAT),
        workspace=identity.get("workspace", WORKSPACE),
    )
    return outgoing_headers(
        base={"Authorization": "Bearer t0ken"},
        identity=ident,
        secret=secret,
        method="POST",
        target="/mcp?x=1",
        body=BODY,
        now=now,
    )


def check(headers, *, secret=SECRET, method="POST", target="/mcp?x=1", body=BODY, now=TS):
    return verify(secret=secret, method=method, target=target, body=body, headers=headers, now=now)


def names_ci(headers: dict[str, str], name: str) -> list[str]:
    return [key for key in headers if key.lower() == name.lower()]


# --- canonical string -------------------------------------------------------------------------------------------


def test_it_builds_the_canonical_string_with_the_exact_layout():
    canonical = canonical_string(
        timestamp=TS,
        method="POST",
        target="/api/mcp?x=1",
        body=BODY,
        owner=OWNER,
        chat=CHAT,
        subchat=SUBCHAT,
        workspace=WORKSPACE,
    )

    assert canonical == (
        f"v1\n{TS}\nPOST\n/api/mcp?x=1\n{BODY_SHA256}\n"
        f"owner={OWNER}\nchat={CHAT}\nsubchat={SUBCHAT}\nworkspace={WORKSPACE}"
    )
    assert not canonical.endswith("\n")
    assert len(canonical.split("\n")) == 9


def test_it_uses_empty_values_for_absent_identity_headers():
    assert canonical_string(timestamp=TS, method="POST", target="/mcp", body=BODY).split("\n")[5:] == [
        "owner=",
        "chat=",
        "subchat=",
        "workspace=",
    ]
    assert root_canonical().endswith(f"owner={OWNER}\nchat={CHAT}\nsubchat=\nworkspace=")


def test_it_hashes_the_empty_byte_string_for_a_request_without_a_body():
    assert hashlib.sha256(b"").hexdigest() == EMPTY_SHA256
    assert root_canonical(body=b"").split("\n")[4] == EMPTY_SHA256
    assert root_canonical(body=None) == root_canonical(body=b"")


def test_it_hashes_the_exact_body_bytes():
    assert root_canonical().split("\n")[4] == BODY_SHA256
    assert root_canonical(body=BODY + b" ").split("\n")[4] != BODY_SHA256


def test_it_upper_cases_the_method_and_keeps_the_raw_target():
    canonical = root_canonical(method="post", target="/mcp/session?id=abc%20def&x=1")

    assert canonical.split("\n")[2:4] == ["POST", "/mcp/session?id=abc%20def&x=1"]


@pytest.mark.parametrize(
    "field",
    [{"owner": "a\nchat=forged"}, {"chat": "x\r\n"}, {"subchat": "s\n"}, {"workspace": "w\0"}, {"target": "/m\ncp"}],
)
def test_it_refuses_line_breaks_that_would_forge_canonical_lines(field):
    with pytest.raises(ValueError):
        root_canonical(**field)


@pytest.mark.parametrize("target", ["mcp", "https://mcp.example.test/mcp", ""])
def test_it_refuses_a_target_that_is_not_the_raw_path(target):
    with pytest.raises(ValueError):
        root_canonical(target=target)


@pytest.mark.parametrize("timestamp", [-1, "1767225600", 1767225600.0, True])
def test_it_refuses_a_timestamp_that_is_not_unix_seconds(timestamp):
    with pytest.raises((TypeError, ValueError)):
        root_canonical(timestamp=timestamp)


# --- sign ---------------------------------------------------------------------------------------------------------


def test_it_signs_with_the_known_vector():
    canonical = root_canonical()
    independent = hmac.new(SECRET.encode("utf-8"), canonical.encode("utf-8"), hashlib.sha256).hexdigest()

    assert sign(SECRET, canonical) == KNOWN_SIGNATURE
    assert sign(SECRET, canonical) == "v1=" + independent


def test_it_keys_the_hmac_with_the_secret_text_not_the_decoded_bytes():
    canonical = root_canonical()
    decoded = hmac.new(bytes.fromhex(SECRET), canonical.encode("utf-8"), hashlib.sha256).hexdigest()

    assert decoded == DECODED_KEY_DIGEST
    assert sign(SECRET, canonical) != "v1=" + DECODED_KEY_DIGEST


def test_it_emits_the_v1_prefix_and_lowercase_hex():
    signature = sign(SECRET, root_canonical())

    assert signature.startswith("v1=")
    assert len(signature) == 3 + 64
    assert signature[3:] == signature[3:].lower()
    int(signature[3:], 16)


def test_it_refuses_to_sign_with_an_empty_secret():
    with pytest.raises(ValueError):
        sign("", root_canonical())


# --- identity headers ---------------------------------------------------------------------------------------------


def test_it_sends_all_four_identity_headers_for_a_subchat_with_a_workspace():
    assert identity_headers(owner=OWNER, chat=CHAT, subchat=SUBCHAT, workspace=WORKSPACE) == {
        "X-Coder-Owner-Id": OWNER,
        "X-Coder-Chat-Id": CHAT,
        "X-Coder-Subchat-Id": SUBCHAT,
        "X-Coder-Workspace-Id": WORKSPACE,
    }


@pytest.mark.parametrize("absent", [None, ""])
def test_it_omits_subchat_and_workspace_headers_when_absent(absent):
    assert identity_headers(owner=OWNER, chat=CHAT, subchat=absent, workspace=absent) == {
        "X-Coder-Owner-Id": OWNER,
        "X-Coder-Chat-Id": CHAT,
    }


def test_it_uses_the_reference_header_names():
    assert IDENTITY_HEADERS == ("X-Coder-Owner-Id", "X-Coder-Chat-Id", "X-Coder-Subchat-Id", "X-Coder-Workspace-Id")
    assert TIMESTAMP_HEADER == "X-Coder-Signature-Timestamp"
    assert SIGNATURE_HEADER == "X-Coder-Signature"
    assert MAX_SKEW_SECONDS == 300


@pytest.mark.parametrize("missing", [{"owner": ""}, {"chat": ""}, {"owner": None}])
def test_it_refuses_identity_without_owner_or_chat(missing):
    fields = {"owner": OWNER, "chat": CHAT, "subchat": None, "workspace": None, **missing}
    with pytest.raises(ValueError):
        identity_headers(**fields)


# --- outgoing headers ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("secret", [None, ""])
def test_it_does_not_sign_without_a_secret(secret):
    headers = outgoing_headers(
        base={"Authorization": "Bearer t0ken"},
        identity=identity_headers(owner=OWNER, chat=CHAT, subchat=None, workspace=None),
        secret=secret,
        method="POST",
        target="/mcp",
        body=BODY,
        now=TS,
    )

    assert headers == {"X-Coder-Owner-Id": OWNER, "X-Coder-Chat-Id": CHAT, "Authorization": "Bearer t0ken"}


def test_it_signs_the_identity_headers_it_sends():
    headers = signed_request()

    assert list(headers) == [*IDENTITY_HEADERS, "Authorization", TIMESTAMP_HEADER, SIGNATURE_HEADER]
    assert headers[TIMESTAMP_HEADER] == str(TS)
    expected = canonical_string(
        timestamp=TS,
        method="POST",
        target="/mcp?x=1",
        body=BODY,
        owner=OWNER,
        chat=CHAT,
        subchat=SUBCHAT,
        workspace=WORKSPACE,
    )
    assert headers[SIGNATURE_HEADER] == sign(SECRET, expected)
    assert check(headers) == (True, "ok")


def test_it_signs_a_root_chat_with_the_known_vector():
    headers = outgoing_headers(
        base={},
        identity=identity_headers(owner=OWNER, chat=CHAT, subchat=None, workspace=None),
        secret=SECRET,
        method="POST",
        target="/mcp",
        body=BODY,
        now=TS,
    )

    assert headers[SIGNATURE_HEADER] == KNOWN_SIGNATURE


def test_it_stamps_the_current_time_by_default(monkeypatch):
    monkeypatch.setattr(signing.time, "time", lambda: TS + 0.9)

    headers = signed_request(now=None)

    assert headers[TIMESTAMP_HEADER] == str(TS)
    assert check(headers, now=None) == (True, "ok")


def test_it_lets_a_colliding_auth_header_win_and_signs_its_value():
    headers = outgoing_headers(
        base={"X-Coder-Owner-Id": "svc-account-7"},
        identity=identity_headers(owner=OWNER, chat=CHAT, subchat=None, workspace=None),
        secret=SECRET,
        method="POST",
        target="/mcp",
        body=BODY,
        now=TS,
    )

    assert names_ci(headers, "X-Coder-Owner-Id") == ["X-Coder-Owner-Id"]
    assert headers["X-Coder-Owner-Id"] == "svc-account-7"
    assert OWNER not in headers.values()
    signed_as = root_canonical(owner="svc-account-7")
    assert headers[SIGNATURE_HEADER] == sign(SECRET, signed_as)
    assert check(headers, target="/mcp") == (True, "ok")


def test_it_matches_colliding_auth_headers_case_insensitively():
    headers = outgoing_headers(
        base={"x-coder-chat-id": "from-auth", "authorization": "Bearer t0ken"},
        identity=identity_headers(owner=OWNER, chat=CHAT, subchat=SUBCHAT, workspace=None),
        secret=SECRET,
        method="POST",
        target="/mcp",
        body=BODY,
        now=TS,
    )

    assert names_ci(headers, "X-Coder-Chat-Id") == ["x-coder-chat-id"]
    assert headers["x-coder-chat-id"] == "from-auth"
    assert headers[SIGNATURE_HEADER] == sign(SECRET, root_canonical(chat="from-auth", subchat=SUBCHAT))
    assert check(headers, target="/mcp") == (True, "ok")


def test_it_signs_a_colliding_header_that_fills_an_absent_identity_slot():
    headers = outgoing_headers(
        base={"X-CODER-WORKSPACE-ID": "ws-from-auth"},
        identity=identity_headers(owner=OWNER, chat=CHAT, subchat=None, workspace=None),
        secret=SECRET,
        method="POST",
        target="/mcp",
        body=BODY,
        now=TS,
    )

    assert headers["X-CODER-WORKSPACE-ID"] == "ws-from-auth"
    assert headers[SIGNATURE_HEADER] == sign(SECRET, root_canonical(workspace="ws-from-auth"))


def test_it_signs_the_value_as_http_delivers_it():
    headers = outgoing_headers(
        base={"X-Coder-Owner-Id": "  svc-account-7\t"},
        identity=identity_headers(owner=OWNER, chat=CHAT, subchat=None, workspace=None),
        secret=SECRET,
        method="POST",
        target="/mcp",
        body=BODY,
        now=TS,
    )

    assert headers["X-Coder-Owner-Id"] == "svc-account-7"
    assert headers[SIGNATURE_HEADER] == sign(SECRET, root_canonical(owner="svc-account-7"))


def test_it_replaces_a_configured_signature_header_when_signing():
    headers = outgoing_headers(
        base={"x-coder-signature": "v1=" + "0" * 64, "X-Coder-Signature-Timestamp": "1"},
        identity=identity_headers(owner=OWNER, chat=CHAT, subchat=None, workspace=None),
        secret=SECRET,
        method="POST",
        target="/mcp",
        body=BODY,
        now=TS,
    )

    assert names_ci(headers, SIGNATURE_HEADER) == [SIGNATURE_HEADER]
    assert names_ci(headers, TIMESTAMP_HEADER) == [TIMESTAMP_HEADER]
    assert headers[SIGNATURE_HEADER] == KNOWN_SIGNATURE


def test_it_refuses_auth_headers_that_repeat_a_name_case_insensitively():
    with pytest.raises(ValueError):
        outgoing_headers(
            base={"X-Coder-Owner-Id": "a", "x-coder-owner-id": "b"},
            identity=identity_headers(owner=OWNER, chat=CHAT, subchat=None, workspace=None),
            secret=SECRET,
            method="POST",
            target="/mcp",
            body=BODY,
            now=TS,
        )


# --- verify -------------------------------------------------------------------------------------------------------


def test_it_verifies_a_signed_request():
    assert check(signed_request()) == (True, "ok")


def test_it_looks_up_received_headers_case_insensitively():
    received = {name.lower(): value for name, value in signed_request().items()}

    assert check(received) == (True, "ok")


def test_it_accepts_raw_byte_header_values():
    received = {name: value.encode("latin-1") for name, value in signed_request().items()}

    assert check(received) == (True, "ok")


def test_it_verifies_with_a_constant_time_compare(monkeypatch):
    calls = []
    real = hmac.compare_digest

    def recording(a, b):
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", recording)
    headers = signed_request()

    assert check(headers) == (True, "ok")
    assert calls == [(headers[SIGNATURE_HEADER].encode(), headers[SIGNATURE_HEADER].encode())]
    calls.clear()
    assert check(headers, secret="other")[0] is False
    assert len(calls) == 1


def test_it_rejects_a_wrong_secret():
    assert check(signed_request(), secret=SECRET[::-1]) == (False, "signature mismatch")


def test_it_rejects_the_decoded_bytes_keying():
    headers = signed_request()
    canonical = canonical_string(
        timestamp=TS,
        method="POST",
        target="/mcp?x=1",
        body=BODY,
        owner=OWNER,
        chat=CHAT,
        subchat=SUBCHAT,
        workspace=WORKSPACE,
    )
    wrong = hmac.new(bytes.fromhex(SECRET), canonical.encode(), hashlib.sha256).hexdigest()

    assert check({**headers, SIGNATURE_HEADER: "v1=" + wrong}) == (False, "signature mismatch")


@pytest.mark.parametrize(
    "tamper",
    [
        {"body": BODY + b" "},
        {"body": b""},
        {"method": "PUT"},
        {"target": "/mcp?x=2"},
        {"target": "/mcp"},
        {"target": "/other?x=1"},
    ],
    ids=["body-appended", "body-dropped", "method", "query", "query-dropped", "path"],
)
def test_it_rejects_a_tampered_request(tamper):
    assert check(signed_request(), **tamper) == (False, "signature mismatch")


@pytest.mark.parametrize("name", IDENTITY_HEADERS)
def test_it_rejects_a_tampered_identity_header(name):
    headers = signed_request()

    assert check({**headers, name: "someone-else"}) == (False, "signature mismatch")
    assert check({key: value for key, value in headers.items() if key != name}) == (False, "signature mismatch")


def test_it_rejects_an_identity_header_added_after_signing():
    headers = signed_request(subchat=None, workspace=None)
    assert check(headers) == (True, "ok")

    assert check({**headers, "X-Coder-Subchat-Id": SUBCHAT}) == (False, "signature mismatch")


def test_it_rejects_a_replay_with_a_new_timestamp():
    headers = signed_request()

    assert check({**headers, TIMESTAMP_HEADER: str(TS + 1)}, now=TS + 1) == (False, "signature mismatch")


@pytest.mark.parametrize("skew", [MAX_SKEW_SECONDS + 1, -(MAX_SKEW_SECONDS + 1)], ids=["past", "future"])
def test_it_rejects_a_timestamp_more_than_300_seconds_off(skew):
    ok, reason = check(signed_request(), now=TS + skew)

    assert ok is False
    assert "300 seconds" in reason


@pytest.mark.parametrize("skew", [MAX_SKEW_SECONDS, -MAX_SKEW_SECONDS, 0], ids=["past", "future", "exact"])
def test_it_accepts_a_timestamp_up_to_300_seconds_off(skew):
    assert check(signed_request(), now=TS + skew) == (True, "ok")


@pytest.mark.parametrize("name", [TIMESTAMP_HEADER, SIGNATURE_HEADER])
def test_it_rejects_a_missing_signature_header(name):
    headers = {key: value for key, value in signed_request().items() if key != name}

    assert check(headers) == (False, f"missing {name} header")


@pytest.mark.parametrize(
    "value",
    ["", "abc", "-1767225600", "+1767225600", "01767225600", "1767225600.0", "1_767_225_600", "١٧٦٧٢٢٥٦٠٠", "1e9"],
)
def test_it_rejects_a_malformed_timestamp(value):
    assert check({**signed_request(), TIMESTAMP_HEADER: value}) == (False, f"malformed {TIMESTAMP_HEADER} header")


@pytest.mark.parametrize("prefix", ["v2=", "sha256=", "V1=", ""])
def test_it_rejects_a_signature_without_the_v1_prefix(prefix):
    headers = signed_request()
    digest = headers[SIGNATURE_HEADER].removeprefix("v1=")

    ok, reason = check({**headers, SIGNATURE_HEADER: prefix + digest})

    assert ok is False
    assert reason.startswith(f"unsupported {SIGNATURE_HEADER} version")


@pytest.mark.parametrize(
    "mangle",
    [
        lambda sig: sig.upper().replace("V1=", "v1="),
        lambda sig: sig[:-1],
        lambda sig: sig + "0",
        lambda sig: sig[:-1] + "g",
        lambda sig: sig + "," + sig,
        lambda sig: "v1=",
        lambda sig: "v1=é" + sig[4:],
    ],
    ids=["uppercase-hex", "short", "long", "non-hex", "two-signatures", "empty-digest", "non-ascii"],
)
def test_it_rejects_a_malformed_signature(mangle):
    headers = signed_request()

    assert check({**headers, SIGNATURE_HEADER: mangle(headers[SIGNATURE_HEADER])}) == (
        False,
        f"malformed {SIGNATURE_HEADER} header",
    )


def test_it_rejects_when_no_secret_is_configured():
    assert check(signed_request(), secret="") == (False, "signing secret is not configured")


def test_it_rejects_an_identity_header_received_twice_with_different_values():
    headers = signed_request()

    ok, _ = check({**headers, "x-coder-owner-id": "someone-else"})

    assert ok is False


# --- published vectors --------------------------------------------------------------------------------------------


def load_vectors() -> list[dict]:
    return json.loads(VECTORS_PATH.read_text(encoding="utf-8"))


def vector_body(vector: dict) -> bytes:
    assert ("body" in vector) != ("body_hex" in vector), "exactly one of body / body_hex"
    return vector["body"].encode("utf-8") if "body" in vector else bytes.fromhex(vector["body_hex"])


def received_value(headers: dict[str, str], name: str) -> str:
    return next((value for key, value in headers.items() if key.lower() == name.lower()), "")


def test_it_publishes_vectors_covering_the_edge_cases():
    vectors = load_vectors()
    names = [vector["name"] for vector in vectors]

    assert len(names) == len(set(names)) >= 5
    assert any("sender" in vector for vector in vectors), "a collision vector"
    assert any(vector_body(vector) == b"" for vector in vectors), "a vector without a body"
    assert any("?" in vector["target"] for vector in vectors), "a vector with a query string"
    assert any(len(vector["headers"]) == 4 for vector in vectors), "a vector with every identity header"
    assert any(len(vector["headers"]) == 2 for vector in vectors), "a root-chat vector"


@pytest.mark.parametrize("vector", load_vectors(), ids=lambda vector: vector["name"])
def test_it_reproduces_every_published_vector(vector):
    body = vector_body(vector)
    headers = vector["headers"]
    expected = vector["expected"]

    assert hashlib.sha256(body).hexdigest() == expected["body_sha256"]
    canonical = canonical_string(
        timestamp=vector["timestamp"],
        method=vector["method"],
        target=vector["target"],
        body=body,
        owner=received_value(headers, "X-Coder-Owner-Id"),
        chat=received_value(headers, "X-Coder-Chat-Id"),
        subchat=received_value(headers, "X-Coder-Subchat-Id"),
        workspace=received_value(headers, "X-Coder-Workspace-Id"),
    )
    assert canonical == expected["canonical"]
    assert sign(vector["secret"], canonical) == expected["signature"]

    # The receiver's side: the request as it arrives verifies.
    received = {
        **headers,
        TIMESTAMP_HEADER: str(vector["timestamp"]),
        SIGNATURE_HEADER: expected["signature"],
    }
    assert verify(
        secret=vector["secret"],
        method=vector["method"],
        target=vector["target"],
        body=body,
        headers=received,
        now=vector["timestamp"],
    ) == (True, "ok")

    # The sender's side: building the request produces exactly these headers and this signature.
    sender = vector.get("sender", {"identity": headers, "auth_headers": {}})
    sent = outgoing_headers(
        base=sender["auth_headers"],
        identity=sender["identity"],
        secret=vector["secret"],
        method=vector["method"],
        target=vector["target"],
        body=body,
        now=vector["timestamp"],
    )
    assert {key.lower(): value for key, value in sent.items()} == {
        key.lower(): value for key, value in received.items()
    }


# --- the page for MCP server authors --------------------------------------------------------------------------------

DOC_PATH = VECTORS_PATH.with_name("mcp-signing.md")


def doc_example() -> dict:
    text = DOC_PATH.read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)
    assert len(blocks) == 1, "one copyable Python example"
    namespace: dict = {}
    exec(compile(blocks[0], str(DOC_PATH), "exec"), namespace)
    return namespace


@pytest.mark.parametrize("vector", load_vectors(), ids=lambda vector: vector["name"])
def test_it_documents_an_example_verifier_that_accepts_every_vector(vector):
    verify_example = doc_example()["verify_coder_signature"]
    received = {
        **vector["headers"],
        TIMESTAMP_HEADER: str(vector["timestamp"]),
        SIGNATURE_HEADER: vector["expected"]["signature"],
    }
    args = (vector["secret"], vector["method"], vector["target"], vector_body(vector))

    assert verify_example(*args, received, now=vector["timestamp"]) is True
    assert verify_example(*args, received, now=vector["timestamp"] + MAX_SKEW_SECONDS + 1) is False
    assert verify_example(*args, {**received, "X-Coder-Chat-Id": "forged"}, now=vector["timestamp"]) is False
    assert verify_example(vector["secret"][::-1], *args[1:], received, now=vector["timestamp"]) is False


def test_it_documents_the_example_with_only_the_standard_library():
    text = DOC_PATH.read_text(encoding="utf-8")
    example = re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)[0]
    imported = set(re.findall(r"^(?:import|from) (\w+)", example, flags=re.MULTILINE))

    assert imported
    assert imported <= sys.stdlib_module_names


def test_it_imports_without_django():
    script = (
        "import importlib.util, sys\n"
        f"spec = importlib.util.spec_from_file_location('signing', {str(Path(signing.__file__))!r})\n"
        "module = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(module)\n"
        "assert not any(name == 'django' or name.startswith('django.') for name in sys.modules), 'django imported'\n"
        "print(module.SIGNATURE_HEADER)\n"
    )
    result = subprocess.run([sys.executable, "-I", "-c", script], capture_output=True, text=True)

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "X-Coder-Signature"
