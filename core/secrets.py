"""Recognising secrets, so they are never indexed, stored, copied or rendered.

Two kinds of rule (`core/secret_rules.py`): token formats (detect-secrets' plugins plus ours), and assignments whose
name says the value is secret (`password: …`, `DB_PASSWORD=…`, `"api_key": "…"`). A found secret is the value only,
so `redact` keeps the name readable: `password: «redacted password»`. Documented example values and placeholders
(`AKIAIOSFODNN7EXAMPLE`, `changeme`, `<password>`, `${VAR}`, `xxxx`) are allowed, so docs and tests stay indexed.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass
from fnmatch import translate
from functools import lru_cache
from pathlib import PurePosixPath

from .secret_rules import keywords, token_rules

SECRET_FILE_PATTERNS = (
    ".env", ".env.*", "*.env", "*.pem", "*.key", "*.p12", "*.pfx", "*.keystore", "*.jks", "id_rsa*", "id_dsa*",
    "id_ecdsa*", "id_ed25519*", ".netrc", ".pgpass", ".npmrc", ".pypirc", "credentials", "*credentials*.json",
    "*.kdbx", ".htpasswd", "shadow", "gshadow",
    # Data files only: `secrets.py` or `credentials.go` is code about secrets, and is scanned like any code.
    *(f"{stem}.{ext}" for stem in ("secrets", "credentials")
      for ext in ("yml", "yaml", "json", "toml", "ini", "txt", "conf", "cfg", "properties", "xml")),
)
_SECRET_NAME = re.compile("|".join(translate(pattern) for pattern in SECRET_FILE_PATTERNS))
_EXAMPLE_SUFFIXES = (".example", ".sample", ".template", ".dist")

# Languages where a secret assignment is a quoted literal: `password = get_password()` names a value, not one.
_CODE_SUFFIXES = frozenset({
    ".py", ".pyi", ".js", ".mjs", ".cjs", ".jsx", ".ts", ".mts", ".cts", ".tsx", ".go", ".rs", ".java", ".kt",
    ".scala", ".rb", ".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".hxx", ".cs", ".php", ".swift", ".m",
    ".lua", ".dart",
})

# After a secret's name: closing quotes or brackets (`"password":`, `env["DB_PASSWORD"] =`), an assignment, then
# a quoted value (a JSON-escaped quote counts, as in notebooks) or a bare one.
_ASSIGNMENT = re.compile(
    r"""(?:\\?["'`]|\]){0,2}[ \t]*(?::=|=>|=(?!=)|:(?!:))[ \t]*"""
    r"""(?:(?P<q>\\?["'`])(?P<quoted>[^"'`\\\n]{1,500})(?P=q)|(?P<bare>[^\s"'`\\,;]{1,500}))"""
)
_NAME_CHARS = re.compile(r"[\w.-]{0,64}")
# A name ending in one of these holds something about a secret, not the secret (`password_file`, `SECRET_NAME`).
_NOT_VALUE_SUFFIXES = frozenset({
    "file", "files", "path", "dir", "env", "var", "name", "names", "id", "ids", "type", "length", "len", "field",
    "prompt", "label", "hint", "policy", "header", "param", "method", "mode", "version", "count", "min", "max",
    "regex", "pattern", "required", "enabled", "url", "uri", "ref", "key_name", "store", "manager", "backend",
    "provider", "source", "command", "cmd", "input", "option", "options", "placeholder", "help", "message", "text",
})
_PLACEHOLDER_WORDS = frozenset({
    "password", "passwd", "secret", "token", "changeme", "change_me", "change-me", "none", "null", "nil", "true",
    "false", "undefined", "empty", "string", "str", "bytes", "int", "required", "optional", "value", "test",
    "testing", "fake", "mock", "dummy", "foo", "bar", "baz", "dev", "demo", "sample", "example", "placeholder",
    "redacted", "hidden", "masked", "secret_key", "api_key", "your_password", "mypassword", "todo", "tbd", "xxx",
})
_PLACEHOLDER_MARKS = re.compile(
    r"(?i:example|sample|placeholder|dummy|changeme|change[_-]me|your[_-]|redacted|«)|[xX*]{4,}|\.\.\.|"
    r"\$\{|\{\{|%\(|<[^>]*>|^\$[A-Za-z_]\w*$|^%[A-Za-z_]+%$"
)
# Every token format has a long run of letters and digits, and an assignment or URL password needs one of `:=@$`:
# paths without either (nearly all of them) skip the full scan, which matters when listing large trees.
_PATH_MAY_HOLD_SECRET = re.compile(r"[A-Za-z0-9]{16}|[:=@$]")
_DOTTED_NAME = re.compile(r"[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)+(?:\(\))?")
_ENV_NAME = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")


@dataclass(frozen=True)
class SecretHit:
    """Where a secret was found: its kind and the character span of the secret value."""

    kind: str
    start: int
    end: int


def marker(kind: str) -> str:
    """What replaces a secret. Guillemets, not brackets: Rich and Textual would read `[...]` as markup."""
    return f"«redacted {kind}»"


def is_secret_path(path: str) -> bool:
    """Files that hold secrets by nature (`.env`, keys, credential files; `.env.example` is not one), and files
    whose path itself contains a secret."""
    name = PurePosixPath(path).name
    if _SECRET_NAME.match(name) and not name.endswith(_EXAMPLE_SUFFIXES):
        return True
    return bool(_PATH_MAY_HOLD_SECRET.search(path) and find_secrets(path))


def find_secrets(text: str, path: str = "") -> list[SecretHit]:
    """Every secret in text, in order and without overlaps. `path` says what the text is: in code files a
    secret assignment must be a quoted literal."""
    if not text:
        return []
    hits = _token_hits(text) + _assignment_hits(text, PurePosixPath(path).suffix.lower() in _CODE_SUFFIXES)
    hits.sort(key=lambda h: (h.start, -h.end))
    merged: list[SecretHit] = []
    for hit in hits:
        if merged and hit.start < merged[-1].end:
            last = merged[-1]
            merged[-1] = SecretHit(last.kind, last.start, max(last.end, hit.end))
        else:
            merged.append(hit)
    return merged


def redact(text: str, path: str = "") -> tuple[str, int]:
    """Replace every secret value with a marker; returns the new text and how many were replaced."""
    hits = find_secrets(text, path)
    if not hits:
        return text, 0
    out, cursor = [], 0
    for hit in hits:
        out += [text[cursor : hit.start], marker(hit.kind)]
        cursor = hit.end
    out.append(text[cursor:])
    return "".join(out), len(hits)


CACHED_TEXT_CHARS = 16_000
"""Rendered texts up to this size keep their redacted form in a bounded cache: a repeated search (the resident
server, the dashboard's refreshes) scans the same titles, texts and paths again otherwise."""


def redacted(text: str) -> str:
    """`redact` when only the text matters (rendering)."""
    return _cached_redacted(text) if len(text) <= CACHED_TEXT_CHARS else redact(text)[0]


@lru_cache(maxsize=4096)
def _cached_redacted(text: str) -> str:
    return redact(text)[0]


def redacted_path(path: str) -> str:
    """`redacted` for a file path, skipping the scan for paths that cannot hold a secret (a commit that touches
    ten thousand files would otherwise scan each name in full)."""
    return redacted(path) if _PATH_MAY_HOLD_SECRET.search(path) else path


def redact_json(value):
    """A JSON-ready value with every string in it redacted (for outputs built from stored rows)."""
    if isinstance(value, str):
        return redacted(value)
    if isinstance(value, dict):
        return {redact_json(k): redact_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact_json(v) for v in value]
    return value


def _token_hits(text: str) -> list[SecretHit]:
    hits = []
    for rule in token_rules():
        if rule.anchor and rule.anchor not in text:
            continue
        for m in rule.pattern.finditer(text):
            start, end = _value_span(m, rule.value_group)
            if not rule.multiline:
                end = _clamp(text, start, end)
            value = text[start:end]
            if end - start < 4 or _is_placeholder(value):
                continue
            if rule.kind == "docker auth" and not _is_user_password(value):
                continue
            hits.append(SecretHit(rule.kind, start, end))
    return hits


def _value_span(m: re.Match[str], value_group: bool) -> tuple[int, int]:
    if value_group:
        for group in range(m.re.groups, 0, -1):
            if m.group(group):
                return m.span(group)
    start, end = m.span()
    text = m.string
    # detect-secrets' Artifactory pattern includes the delimiters around the token.
    while start < end and text[start] in " \t\r\n\"'=:":
        start += 1
    while end > start and text[end - 1] in " \t\r\n\"'":
        end -= 1
    return start, end


def _clamp(text: str, start: int, end: int) -> int:
    """A one-line secret never runs over a quote, backslash or whitespace: the JSON or code around it stays whole."""
    for i in range(start, end):
        if text[i] in "\"'`\\ \t\r\n":
            return i
    return end


def _is_user_password(value: str) -> bool:
    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return False
    return ":" in decoded and decoded.isprintable()


def _assignment_hits(text: str, code: bool) -> list[SecretHit]:
    hits = []
    # Case-insensitive alternations are slow in `re`; matching the lowercased text is ten times faster, and the
    # spans carry over whenever lowercasing kept the length (it does except for a few non-ASCII letters).
    lowered = text.lower()
    names = keywords().finditer(lowered) if len(lowered) == len(text) else keywords(re.I).finditer(text)
    for m in names:
        name_end = _NAME_CHARS.match(text, m.end()).end()
        suffix = re.split(r"[_.-]", text[m.end() : name_end].lower())[-1] if name_end > m.end() else ""
        if suffix in _NOT_VALUE_SUFFIXES:
            continue
        a = _ASSIGNMENT.match(text, name_end)
        if a is None:
            continue
        if a.group("quoted") is not None:
            start, end = a.span("quoted")
            if _plausible(a.group("quoted"), quoted=True):
                hits.append(SecretHit("secret", start, end))
        elif not code and _plausible(a.group("bare"), quoted=False):
            start, end = a.span("bare")
            hits.append(SecretHit("secret", start, end))
    return hits


def _plausible(value: str, quoted: bool) -> bool:
    """Whether an assigned value looks like a secret rather than a reference, a type, a placeholder or prose."""
    if len(value) < (4 if quoted else 6) or " " in value or _is_placeholder(value):
        return False
    if value.lower() in _PLACEHOLDER_WORDS or keywords().search(value.lower()) or value.isdigit():
        return False
    if _ENV_NAME.fullmatch(value) or value.startswith(("/", "./", "~/", "../")) or "://" in value:
        return False
    if not re.search(r"[A-Za-z0-9]", value) or _is_sequential(value):
        return False
    if quoted:
        return True
    if any(c in value for c in "()[]{}<>") or _DOTTED_NAME.fullmatch(value):
        return False
    # A bare word in prose or a config schema ("password: required") is not a secret; one with a digit, a symbol
    # or inner capitals is.
    return bool(re.search(r"[^A-Za-z]", value) or re.search(r"[A-Z]", value[1:]))


def _is_placeholder(value: str) -> bool:
    if len(set(value.lower())) <= 2:
        return True
    return bool(_PLACEHOLDER_MARKS.search(value))


def _is_sequential(value: str) -> bool:
    lowered = value.lower()
    return any(lowered in seq for seq in ("abcdefghijklmnopqrstuvwxyz", "0123456789" * 2, "qwertyuiop"))
