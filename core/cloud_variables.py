"""Which environment variables are object-store credentials: standard library free, so the thin client (which
forwards them with a command, and starts a server without them) can tell them apart without importing the
credentials' handling (core/credentials.py)."""

from __future__ import annotations

CLOUD_PREFIXES = ("AWS_", "GOOGLE_", "AZURE_")
"""The variables the object stores read (object_store's `from_env` of S3, GCS and Azure)."""


def is_cloud_variable(name: str) -> bool:
    return name.startswith(CLOUD_PREFIXES)


def without_cloud_variables(env):
    """`env` (a mapping of names to values) with no object-store credentials: the environment a resident server is
    started with."""
    return {k: v for k, v in env.items() if not is_cloud_variable(k)}
