"""Error pages in the product's look. API paths answer with the JSON error shape instead."""

from django.http import JsonResponse
from django.shortcuts import render


def _json(status: int, message: str) -> JsonResponse:
    return JsonResponse({"message": message, "detail": "", "validations": []}, status=status)


def forbidden(request, exception=None):
    message = str(exception) if exception and str(exception) else "You don't have permission to do that."
    if request.path.startswith("/api/"):
        return _json(403, message)
    return render(request, "403.html", {"message": message}, status=403)


def not_found(request, exception=None):
    if request.path.startswith("/api/"):
        return _json(404, "Resource not found or you do not have access to this resource")
    return render(request, "404.html", status=404)


class ApiErrorShapeMiddleware:
    """A request to an API path with a method the endpoint does not take gets the JSON error shape (with ``Allow``),
    not Django's plain-text 405."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if response.status_code != 405 or not request.path.startswith("/api/"):
            return response
        if response.get("Content-Type", "").startswith("application/json"):
            return response
        allowed = response.get("Allow", "")
        shaped = JsonResponse(
            {
                "message": "Method not allowed.",
                "detail": f"{request.method} is not accepted here; use {allowed}." if allowed else "",
                "validations": [],
            },
            status=405,
        )
        if allowed:
            shaped["Allow"] = allowed
        return shaped


def server_error(request):
    if request.path.startswith("/api/"):
        return _json(500, "An internal error occurred.")
    return render(request, "500.html", status=500)
