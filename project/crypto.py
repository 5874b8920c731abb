"""Encryption of secrets at rest: Fernet with key rotation (MultiFernet; the first key encrypts).

``FIELD_ENCRYPTION_KEYS`` holds one or more urlsafe-base64 Fernet keys. To rotate, put the new key first and keep
the old ones after it until ``manage.py rotate_field_keys`` (later) or a re-save has re-encrypted every value.
"""

from __future__ import annotations

from functools import cache

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import models


class DecryptionError(Exception):
    """A stored value could not be decrypted with any configured key. Never carries the value."""


@cache
def _fernet_for(keys: tuple[str, ...]) -> MultiFernet:
    if not keys:
        raise ImproperlyConfigured("FIELD_ENCRYPTION_KEYS is empty.")
    try:
        return MultiFernet([Fernet(key.encode()) for key in keys])
    except ValueError as exc:
        raise ImproperlyConfigured("FIELD_ENCRYPTION_KEYS holds a key that is not a Fernet key.") from exc


def _fernet() -> MultiFernet:
    return _fernet_for(tuple(settings.FIELD_ENCRYPTION_KEYS))


def encrypt(plaintext: str) -> str:
    """Encrypt text with the first configured key; the token is ASCII text."""
    return _fernet().encrypt(plaintext.encode()).decode("ascii")


def decrypt(token: str) -> str:
    """Decrypt a token made by any configured key."""
    try:
        return _fernet().decrypt(token.encode("ascii")).decode()
    except (InvalidToken, UnicodeError):
        raise DecryptionError("stored secret could not be decrypted with the configured keys") from None


def rotate(token: str) -> str:
    """Re-encrypt a token under the first key (for key rotation)."""
    try:
        return _fernet().rotate(token.encode("ascii")).decode("ascii")
    except InvalidToken:
        raise DecryptionError("stored secret could not be decrypted with the configured keys") from None


class SecretStr(str):
    """A decrypted secret whose repr never shows the value (so it cannot leak through a traceback or log)."""

    def __repr__(self) -> str:
        return "SecretStr('********')"


class EncryptedTextField(models.TextField):
    """A text column that stores Fernet tokens and gives back ``SecretStr`` values.

    Empty strings are stored as they are (an empty secret is no secret). Not searchable and not indexable.
    """

    description = "Text encrypted at rest with the configured field encryption keys"

    def get_prep_value(self, value):
        value = super().get_prep_value(value)
        if value is None or value == "":
            return value
        return encrypt(str(value))

    def from_db_value(self, value, expression, connection):
        if value is None or value == "":
            return value
        return SecretStr(decrypt(value))

    def to_python(self, value):
        if value is None or value == "" or isinstance(value, SecretStr):
            return value
        return SecretStr(value)

    def value_to_string(self, obj):
        # Serialization (dumpdata) must never write the plaintext.
        return "********"
