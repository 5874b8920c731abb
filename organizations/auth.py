"""Sign-in by username or email, and the limit on failed attempts."""

from __future__ import annotations

import hashlib

from django.conf import settings
from django.contrib.auth.backends import ModelBackend
from django.core.cache import cache

from .models import User


class UsernameOrEmailBackend(ModelBackend):
    """Authenticate with a username, or with an email address that belongs to exactly one account."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        if username is None or password is None:
            return None
        user = User.objects.filter(username__iexact=username).first()
        if user is None and "@" in username:
            matches = list(User.objects.filter(email__iexact=username)[:2])
            user = matches[0] if len(matches) == 1 else None
        if user is None:
            # Spend the same time as a real check so response timing does not reveal which accounts exist.
            User().set_password(password)
            return None
        if user.check_password(password) and self.user_can_authenticate(user):
            return user
        return None


def _keys(username: str, ip: str | None) -> list[str]:
    digest = hashlib.sha256(username.strip().lower().encode()).hexdigest()[:32]
    keys = [f"signin-fail:user:{digest}"]
    if ip:
        keys.append(f"signin-fail:ip:{ip}")
    return keys


def is_locked_out(username: str, ip: str | None) -> bool:
    limit = settings.LOGIN_FAILURE_LIMIT
    return any((cache.get(key) or 0) >= limit for key in _keys(username, ip))


def note_failure(username: str, ip: str | None) -> None:
    for key in _keys(username, ip):
        if cache.add(key, 1, timeout=settings.LOGIN_FAILURE_WINDOW):
            continue
        try:
            cache.incr(key)
        except ValueError:  # expired between add and incr
            cache.set(key, 1, timeout=settings.LOGIN_FAILURE_WINDOW)


def clear_failures(username: str) -> None:
    cache.delete(_keys(username, None)[0])
