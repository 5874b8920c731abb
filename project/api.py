"""The JSON API root. Apps add their routers here; errors use the documented shape
``{"message", "detail", "validations": [{"field", "detail"}]}``."""

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError
from ninja.errors import ValidationError as NinjaValidationError
from ninja.security import HttpBearer, django_auth


class BearerToken(HttpBearer):
    """``Authorization: Bearer <personal API token>``."""

    def authenticate(self, request, token):
        from organizations.services import api_token_authenticate

        user = api_token_authenticate(token)
        if user is not None:
            request.user = user
        return user


api = NinjaAPI(
    title="Switchboard API",
    version="2",
    auth=[BearerToken(), django_auth],
    urls_namespace="api",
    docs_url="/docs",
    docs_decorator=login_required,
)


def error(request, status: int, message: str, detail: str = "", validations: list | None = None):
    return api.create_response(
        request, {"message": message, "detail": detail, "validations": validations or []}, status=status
    )


@api.exception_handler(AuthenticationError)
def _unauthenticated(request, exc):
    return error(request, 401, "You are not signed in, or the API token is invalid or expired.")


@api.exception_handler(HttpError)
def _http_error(request, exc):
    # Errors ninja raises itself (a refused CSRF check, a body that is not JSON) in the documented shape.
    return error(request, exc.status_code, str(exc))


@api.exception_handler(Http404)
def _not_found(request, exc):
    return error(request, 404, "Resource not found or you do not have access to this resource")


@api.exception_handler(PermissionDenied)
def _forbidden(request, exc):
    return error(request, 403, str(exc) or "You don't have permission to do that.")


@api.exception_handler(ValidationError)
def _invalid(request, exc):
    validations = []
    if hasattr(exc, "error_dict"):
        validations = [{"field": f, "detail": m} for f, ms in exc.message_dict.items() for m in ms]
    message = validations[0]["detail"] if validations else "; ".join(exc.messages)
    return error(request, 400, message, validations=validations)


@api.exception_handler(NinjaValidationError)
def _invalid_request(request, exc):
    validations = [
        {"field": ".".join(str(p) for p in e.get("loc", [])[1:]) or "body", "detail": e.get("msg", "")}
        for e in exc.errors
    ]
    return error(request, 400, "Invalid request.", validations=validations)


api.add_router("/v2/", "organizations.api.router")
api.add_router("/experimental/", "skills.api.router")
api.add_router("/v2/workspace-agent/", "workspaces.api.agent_router")
api.add_router("/v2/", "workspaces.api.router")
api.add_router("/v2/", "chats.api.router")
api.add_router("/v2/", "mcpservers.api.router")
api.add_router("/v2/", "mcpservers.oauth_api.org_router")
api.add_router("/experimental/", "mcpservers.oauth_api.callback_router")
api.add_router("/v2/", "mcpservers.oauth_api.disconnect_router")
