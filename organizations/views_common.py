"""Small pieces that views of several apps share."""

from __future__ import annotations

from collections.abc import Callable

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render


def confirm_and_perform(
    request: HttpRequest,
    perform: Callable[[], object],
    *,
    title: str,
    body: str,
    button: str,
    done: str,
    success_url: str,
    cancel_url: str | None = None,
) -> HttpResponse:
    """A destructive action behind a confirmation page: GET shows ``organizations/confirm.html``; POST calls
    ``perform``, flashes ``done`` and redirects to ``success_url``.

    Precondition: the caller has already checked access (and limits the methods to GET and POST). The Cancel link goes
    to ``cancel_url``, by default ``success_url``.
    """
    if request.method == "POST":
        perform()
        messages.success(request, done)
        return redirect(success_url)
    return render(
        request,
        "organizations/confirm.html",
        {"title": title, "body": body, "action": button, "cancel_url": cancel_url or success_url},
    )
