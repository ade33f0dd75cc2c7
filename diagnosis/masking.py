"""The per-diagnosis pseudonym key, shared by the submission (the file name and CI metadata)
and the mask stage (the log), so that both give a name the same pseudonym."""

from __future__ import annotations

import hashlib
import hmac
import uuid

from django.conf import settings


def masking_secret(diagnosis_id: uuid.UUID | str) -> bytes:
    """Per-diagnosis pseudonym key: stable across retries of one diagnosis, unrelated across two."""
    return hmac.new(
        settings.SECRET_KEY.encode(), f"mask:{diagnosis_id}".encode(), hashlib.sha256
    ).digest()
