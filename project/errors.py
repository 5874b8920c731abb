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


def server_error(request):
    if request.path.startswith("/api/"):
        return _json(500, "An internal error occurred.")
    return render(request, "500.html", status=500)
