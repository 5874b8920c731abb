"""Production settings: `check --deploy` passes, missing secrets stop the start, and every page sends a CSP
without inline script."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from cryptography.fernet import Fernet
from django.urls import reverse

ROOT = Path(__file__).resolve().parents[2]


def production_env(tmp_path, **overrides) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_VERSION"}
    env.update(
        DEBUG="false",
        SECRET_KEY="x" * 20 + "-production-secret-key-for-the-deploy-check-0123456789",
        FIELD_ENCRYPTION_KEYS=Fernet.generate_key().decode(),
        ALLOWED_HOSTS="switchboard.example.com",
        SWITCHBOARD_VAR_DIR=str(tmp_path),
        DJANGO_SETTINGS_MODULE="project.settings",
    )
    env.update(overrides)
    return env


def manage(env, *args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def test_it_passes_the_deploy_check_in_production(tmp_path):
    result = manage(production_env(tmp_path), "check", "--deploy", "--fail-level", "WARNING")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_it_refuses_to_start_without_a_secret_key_in_production(tmp_path):
    result = manage(production_env(tmp_path, SECRET_KEY=""), "check")
    assert result.returncode != 0
    assert "SECRET_KEY is required" in result.stderr


def test_it_refuses_to_start_without_encryption_keys_in_production(tmp_path):
    result = manage(production_env(tmp_path, FIELD_ENCRYPTION_KEYS=""), "check")
    assert result.returncode != 0
    assert "FIELD_ENCRYPTION_KEYS is required" in result.stderr


def test_every_page_sends_a_csp_without_inline_script(world, client_for):
    response = client_for("org_admin").get(reverse("members") + "?org=acme")
    policy = response["Content-Security-Policy"]
    directives = dict(part.strip().split(" ", 1) for part in policy.split(";") if part.strip())
    assert directives["script-src"] == "'self'"
    assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
    body = response.content.decode()
    # No inline <script> bodies and no on* handler attributes anywhere in the page.
    assert "<script>" not in body and " onclick=" not in body and " onchange=" not in body


def test_htmx_is_served_from_our_own_static_files(client_for, world):
    body = client_for("member").get(reverse("agents")).content.decode()
    assert '<script src="/static/htmx/htmx.min.js"' in body
    assert "unpkg" not in body and "cdn" not in body.lower()


def test_error_pages_use_the_product_layout(world, client_for):
    response = client_for("member").get(reverse("members") + "?org=acme")
    assert response.status_code == 404
    body = response.content.decode()
    assert "Not found" in body and 'class="topbar"' in body
    response = client_for("auditor").post(reverse("groups") + "?org=acme", {"name": "x"})
    assert response.status_code == 403
    assert "Not allowed" in response.content.decode() and "Nothing was changed" in response.content.decode()


def test_api_errors_use_the_documented_shape(world, client_for):
    response = client_for("member").get("/api/v2/organizations/acme/members")
    assert response.status_code == 404
    assert set(response.json()) == {"message", "detail", "validations"}


def test_a_method_an_api_endpoint_does_not_take_gets_the_error_shape(world, client_for):
    response = client_for("member").delete("/api/v2/organizations")

    assert response.status_code == 405
    assert response.json() == {
        "message": "Method not allowed.",
        "detail": "DELETE is not accepted here; use GET.",
        "validations": [],
    }
    assert response["Allow"] == "GET"


def test_a_method_a_page_does_not_take_still_gets_a_plain_405(world, client_for):
    response = client_for("member").put("/settings/mcp-connections/")

    assert response.status_code == 405 and not response["Content-Type"].startswith("application/json")


def test_the_api_docs_are_for_signed_in_users_and_served_locally(world, client_for):
    assert client_for("anonymous").get("/api/docs").status_code == 302
    response = client_for("member").get("/api/docs")
    assert response.status_code == 200
    body = response.content.decode()
    assert "/static/ninja/swagger-ui-bundle.js" in body and "cdn" not in body.lower()
    schema = client_for("member").get("/api/openapi.json").json()
    assert "/api/v2/organizations/{organization}/audit-log" in schema["paths"]
