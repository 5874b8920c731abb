from __future__ import annotations

import pytest
from cryptography.fernet import Fernet
from django.db import connection
from django.test import override_settings

from project import crypto

KEY_A = Fernet.generate_key().decode()
KEY_B = Fernet.generate_key().decode()


@override_settings(FIELD_ENCRYPTION_KEYS=[KEY_A])
def test_it_round_trips_and_never_stores_the_plaintext():
    token = crypto.encrypt("s3cr3t-value")
    assert "s3cr3t-value" not in token
    assert crypto.decrypt(token) == "s3cr3t-value"
    assert crypto.encrypt("s3cr3t-value") != token  # random IV: equal secrets do not look equal


def test_it_decrypts_old_values_after_a_new_key_is_put_first_and_rotates_them():
    with override_settings(FIELD_ENCRYPTION_KEYS=[KEY_A]):
        old = crypto.encrypt("rotate me")
    with override_settings(FIELD_ENCRYPTION_KEYS=[KEY_B, KEY_A]):
        assert crypto.decrypt(old) == "rotate me"
        rotated = crypto.rotate(old)
    with override_settings(FIELD_ENCRYPTION_KEYS=[KEY_B]):
        assert crypto.decrypt(rotated) == "rotate me"
        with pytest.raises(crypto.DecryptionError) as exc:
            crypto.decrypt(old)
    assert "rotate me" not in str(exc.value)


def test_it_hides_secret_values_in_reprs():
    value = crypto.SecretStr("hunter2")
    assert value == "hunter2"
    assert "hunter2" not in repr(value)


@pytest.mark.django_db(transaction=True)
def test_the_encrypted_field_stores_ciphertext_and_reads_back_plaintext():
    """A throwaway model on a real table: the column holds a Fernet token, the attribute the secret."""
    from django.db import models

    class Vault(models.Model):
        secret = crypto.EncryptedTextField(blank=True)

        class Meta:
            app_label = "organizations"
            db_table = "test_crypto_vault"

        def __str__(self) -> str:
            return f"vault {self.pk}"

    with connection.schema_editor() as editor:
        editor.create_model(Vault)
    try:
        Vault.objects.create(secret="api-key-123")
        Vault.objects.create(secret="")
        with connection.cursor() as cursor:
            cursor.execute("SELECT secret FROM test_crypto_vault ORDER BY id")
            raw = [row[0] for row in cursor.fetchall()]
        assert "api-key-123" not in raw[0] and raw[0].startswith("gAAAA")
        assert raw[1] == ""
        stored = Vault.objects.order_by("id").first()
        assert stored.secret == "api-key-123" and isinstance(stored.secret, crypto.SecretStr)
        assert "api-key-123" not in repr(stored.secret)
        assert Vault._meta.get_field("secret").value_to_string(stored) == "********"
    finally:
        with connection.schema_editor() as editor:
            editor.delete_model(Vault)
