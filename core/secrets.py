"""Recognising secrets, so they are never indexed, stored, copied or rendered."""

from __future__ import annotations

import re
from dataclasses import dataclass
from fnmatch import fnmatch
from pathlib import PurePosixPath

SECRET_FILE_PATTERNS = (
    ".env", ".env.*", "*.env", "*.pem", "*.key", "*.p12", "*.pfx", "*.keystore", "*.jks", "id_rsa*", "id_dsa*",
    "id_ecdsa*", "id_ed25519*", ".netrc", ".pgpass", ".npmrc", ".pypirc", "credentials", "credentials.*",
    "*credentials*.json", "*.kdbx", "secrets.*", ".htpasswd",
)
_EXAMPLE_SUFFIXES = (".example", ".sample", ".template", ".dist")

SECRET_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("private key block", re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")),
    ("AWS access key", re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA)[0-9A-Z]{16}\b")),
    ("AWS secret key", re.compile(r"(?i)aws.{0,20}secret.{0,20}[=:]\s*['\"]?[A-Za-z0-9/+=]{40}\b")),
    ("GitHub token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{50,})\b")),
    ("Slack token", re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}\b")),
    ("Slack webhook", re.compile(r"https://hooks\.slack\.com/services/[A-Za-z0-9/]{20,}")),
    ("Google API key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b")),
    ("Stripe key", re.compile(r"\b(?:sk|rk)_live_[0-9A-Za-z]{20,}\b")),
    ("OpenAI key", re.compile(r"\bsk-(?:proj-)?[A-Za-z0-9_-]{20,}T3BlbkFJ[A-Za-z0-9_-]{20,}\b")),
    ("Anthropic key", re.compile(r"\bsk-ant-[A-Za-z0-9_-]{30,}\b")),
    ("JSON web token", re.compile(r"\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}")),
)


@dataclass(frozen=True)
class SecretHit:
    """Where a secret was found: its kind and character span."""

    kind: str
    start: int
    end: int


def is_secret_path(path: str) -> bool:
    """File names that hold secrets by convention (`.env`, keys, credential files); `.env.example` is not one."""
    name = PurePosixPath(path).name
    if name.endswith(_EXAMPLE_SUFFIXES):
        return False
    return any(fnmatch(name, pattern) for pattern in SECRET_FILE_PATTERNS)


def find_secrets(text: str) -> list[SecretHit]:
    hits = [SecretHit(kind, m.start(), m.end()) for kind, pattern in SECRET_PATTERNS for m in pattern.finditer(text)]
    return sorted(hits, key=lambda h: h.start)


def redact(text: str) -> tuple[str, int]:
    """Replace every secret-looking string; returns the new text and how many were replaced."""
    hits = find_secrets(text)
    if not hits:
        return text, 0
    out, cursor, count = [], 0, 0
    for hit in hits:
        if hit.start < cursor:
            continue
        out.append(text[cursor : hit.start])
        out.append(f"[REDACTED {hit.kind}]")
        cursor, count = hit.end, count + 1
    out.append(text[cursor:])
    return "".join(out), count
