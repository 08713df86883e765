"""Object-store credentials as a caller's environment gives them, handed to LanceDB explicitly.

The resident server runs commands and calls for clients whose environments differ: a command's credentials are
the AWS_*, GOOGLE_* and AZURE_* variables of its caller, never the server's (the server is started without any).
They reach LanceDB as storage options, named as the object store reads its variables (the name lowercased), and
never as a change to the process's environment, which native threads (LanceDB, ONNX) read meanwhile.

The values are never printed, logged or stored: the repr leaves them out, and what tells one set from another (the
server's engine cache) is a hash of them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from .cloud_variables import is_cloud_variable

_SCHEME_PREFIX = {"s3": "AWS_", "s3a": "AWS_", "gs": "GOOGLE_", "az": "AZURE_", "abfs": "AZURE_", "abfss": "AZURE_",
                  "azure": "AZURE_"}
ENDPOINT_OPTIONS = frozenset({"aws_endpoint", "aws_endpoint_url", "aws_endpoint_url_s3"})
"""The S3 endpoint as variables name it: the setting `team_endpoint`, when set, wins over them."""


def variables_hash(variables: Iterable[tuple[str, str]]) -> str:
    """What tells two sets of environment variables apart without holding their values (which may be secrets)."""
    text = "\0".join(f"{k}={v}" for k, v in variables)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class CloudCredentials:
    """The object-store variables of one environment (empty values left out)."""

    variables: tuple[tuple[str, str], ...] = field(default=(), repr=False)

    @classmethod
    def of(cls, env: Mapping[str, str]) -> CloudCredentials:
        found = {k: v for k, v in env.items() if is_cloud_variable(k) and v}
        for name, value in profile_keys(env).items():
            found.setdefault(name, value)
        return cls(tuple(sorted(found.items())))

    @property
    def key(self) -> str:
        """Tells two sets apart without holding them: a hash (empty for no credentials)."""
        if not self.variables:
            return ""
        return variables_hash(self.variables)[:16]

    def environment(self) -> dict[str, str]:
        """As variables, for a child process's environment."""
        return dict(self.variables)

    def storage_options(self, uri: str) -> dict[str, str]:
        """LanceDB storage options for `uri`'s object store: its own variables, lowercased."""
        prefix = _SCHEME_PREFIX.get(uri.partition("://")[0].lower())
        return {k.lower(): v for k, v in self.variables if prefix is not None and k.startswith(prefix)}


_PROFILE_KEYS = {"aws_access_key_id": "AWS_ACCESS_KEY_ID", "aws_secret_access_key": "AWS_SECRET_ACCESS_KEY",
                 "aws_session_token": "AWS_SESSION_TOKEN", "region": "AWS_REGION"}


def profile_keys(env: Mapping[str, str]) -> dict[str, str]:
    """The keys of the named profile `AWS_PROFILE` of `env`, as variables, from the shared credentials and config
    files that `env` names (`AWS_SHARED_CREDENTIALS_FILE`, `AWS_CONFIG_FILE`, else under its `HOME`). LanceDB reads a
    profile only from its own process's environment, so a caller's profile reaches the server as these keys. Empty
    without a named profile, when keys are given as variables, or when the profile holds none (one that logs in
    through SSO or assumes a role: those need the SDK in the caller's own process)."""
    import configparser
    import os

    name = env.get("AWS_PROFILE") or ""
    if not name or env.get("AWS_ACCESS_KEY_ID"):
        return {}
    home = env.get("HOME") or os.path.expanduser("~")
    sources = ((env.get("AWS_SHARED_CREDENTIALS_FILE") or os.path.join(home, ".aws", "credentials"), name),
               (env.get("AWS_CONFIG_FILE") or os.path.join(home, ".aws", "config"),
                name if name == "default" else f"profile {name}"))
    found: dict[str, str] = {}
    for path, section in sources:
        parser = configparser.RawConfigParser()
        try:
            parser.read(path, encoding="utf-8")
        except (configparser.Error, UnicodeDecodeError):
            continue  # a file the SDK could not read either: as if absent
        if parser.has_section(section):
            for key, variable in _PROFILE_KEYS.items():
                value = parser.get(section, key, fallback="").strip()
                if value:
                    found.setdefault(variable, value)
    if "AWS_ACCESS_KEY_ID" not in found or "AWS_SECRET_ACCESS_KEY" not in found:
        return {}
    return found
