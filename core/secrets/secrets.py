"""Recognising secrets, so they are never indexed, stored, copied or rendered.

One detector for every gate: `find_secrets(text)` gives the same verdict for a text whether it is a file being
indexed, a memory's field, an import record, a search hit or a context document. Three layers (rules in
`core/secrets/secret_rules.py`):

- the maintained rule set (kingfisher: the betterleaks rules and Google's veles detectors), in-process;
- our token formats for what it leaves out (AWS key ids alone, test keys, HTTP credentials, crypt hashes, `.netrc`);
- assignments whose name says the value is secret (`password: …`, `DIGITALOCEAN_TOKEN=…`, `"apiKey": "…"`,
  `<add key="DbPassword" value="…"/>`, Terraform `variable "db_password" { default = "…" }`) with a plausible
  value: not a placeholder, a reference, a type or a word; random-looking when the name only says `key`/`auth`;
- shape and neighbourhood: string literals side by side joined, a credential word before a random-looking value
  in prose, a call's callee and the heading above a fenced block as the value's name (docs/security.md).

A found secret is the value only, so `redact` keeps the name readable: `password: «redacted secret»`. Documented
example values and placeholders (`AKIAIOSFODNN7EXAMPLE`, `changeme`, `<password>`, `${VAR}`, `xxxx`) are allowed,
so docs and tests stay indexed.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections import Counter
from dataclasses import dataclass
from fnmatch import translate
from functools import lru_cache
from urllib.parse import unquote

from .secret_rules import (
    BASIC_KINDS,
    JUDGED_KINDS,
    MIXED_KINDS,
    SECRET_WORDS_ENDING,
    SECRET_WORDS_WHOLE,
    SECRET_WORDS_WITHIN,
    keyword_pattern,
    vendor_kind,
    vendor_scanner,
)

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

# After a secret's name: closing quotes or brackets (`"password":`, `env["DB_PASSWORD"] =`), an assignment, then
# a quoted value (a JSON-escaped quote counts, as in notebooks) or a bare one.
_ASSIGNMENT = re.compile(
    r"""(?:\\?["'`]|\]){0,2}[ \t]*(?::=|=>|\?=|=(?!=)|=(?==[^\s=])|:(?!:))[ \t]*"""
    r"""(?:(?P<q>\\?["'`])(?P<quoted>[^"'`\\\n]{1,500})(?P=q)|(?P<bare>[^\s"'`\\,;]{1,500}))"""
)
_NAME_AFTER = re.compile(r"[\w.-]{0,64}")
_NAME_BEFORE = re.compile(r"[\w.-]{0,64}$")
_NAME_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
# A name ending in one of these holds something about a secret, not the secret (`password_file`, `SECRET_NAME`).
_NOT_VALUE_SUFFIXES = frozenset({
    "file", "files", "path", "dir", "env", "var", "name", "names", "id", "ids", "type", "length", "len", "field",
    "prompt", "label", "hint", "policy", "header", "param", "method", "mode", "version", "count", "min", "max",
    "regex", "pattern", "required", "enabled", "url", "uri", "ref", "store", "manager", "backend", "provider",
    "source", "command", "cmd", "input", "option", "options", "placeholder", "help", "message", "text", "size",
    "bits", "limit", "expiry", "expires", "ttl", "timeout", "format", "prefix", "suffix", "index", "column", "col",
    "class", "schema", "reset", "rotation", "strength", "encoding", "algorithm", "alg", "hash", "usage", "scope",
    "scopes", "kind", "endpoint", "host", "port", "user", "username", "login", "email", "status", "error",
    "settings", "config", "sources",
})
# A name made of these words before `key` is a secret's name (`API_KEY`, `privateApiKey`); `sort_key` is not.
_SECRET_KEY_QUALIFIERS = frozenset({
    "api", "access", "secret", "private", "signing", "master", "encryption", "client", "service", "account", "app",
    "license", "shared", "hmac", "admin", "server", "session", "webhook", "sdk", "write", "read",
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
# XML settings (`<add key="DbPassword" value="…"/>`, `<property name="db.password" value="…"/>`) and Terraform
# variables (`variable "db_password" { default = "…" }`): the name and the value are apart.
_PAIR_VALUES = (
    # (the value, led by a literal so `re` searches fast; the name, read backwards from the value)
    (re.compile(r'value\s*=\s*"([^"\n]{1,500})"'), re.compile(r'\b(?:key|name)\s*=\s*"([^"\n]{1,80})"\s+$'), 200),
    (re.compile(r'default\s*=\s*"([^"\n]{1,500})"'), re.compile(r'\bvariable\s+"([^"\n]{1,80})"\s*\{[^{}]*$'), 600),
)
# Every token format has a long run of letters and digits, and an assignment or URL password needs one of `:=@$`:
# paths without either (nearly all of them) skip the full scan, which matters when listing large trees.
_PATH_MAY_HOLD_SECRET = re.compile(r"[A-Za-z0-9]{16}|[:=@$]")
_DOTTED_NAME = re.compile(r"[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)+(?:\(\))?")
_WORD = re.compile(r"[A-Za-z][a-z]*")
_SNAKE_NAME = re.compile(r"[a-z_][a-z_]*_[a-z_]*")
_VERSION = re.compile(r"[<>=!~^v]*\d+(?:\.\d+)+[\w.+-]*")
_PATH = re.compile(r"(?:~|\.{1,2})?/[\w.-]+(?:/[\w.-]+)*/?")
_ENV_NAME = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_IDENTIFIER = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[_-][A-Za-z0-9]+)+")
_KEY_PATH = re.compile(r"(?:[a-z]+|v?\d+)(?:[:/.](?:[a-z]+|v?\d+)?)+")
"""`user:profile:v2:`: lowercase words and version numbers apart by `:` `/` `.`, as cache keys and routes are."""
_LITERAL = re.compile(r""""[^"\\\n]*"|'[^'\\\n]*'""")
_ADJACENT_LITERALS = re.compile(r"""(?:"[^"\\\n]*"|'[^'\\\n]*')(?:[ \t]*\+?[ \t]*\\?\r?\n?[ \t]*\+?[ \t]*"""
                                r"""(?:"[^"\\\n]*"|'[^'\\\n]*'))+""")
_PROSE_LINKS = r"(?:(?:is|was|=|:|to|as|set|now|env|var|variable|environment|setting|value)[ \t]+){0,4}"
"""The words a sentence puts between a credential and its value (`is`, `set to`, `env var to`)."""
_PROSE_VALUE = r"""([^\s"'`<>()\[\]{},;]{12,200})"""
_PROSE_SOURCE = (r"\b(?:tokens?|passwords?|passwd|passphrase|secrets?|api[ _-]?keys?|pwd)\b[ \t]+"
                 + _PROSE_LINKS + _PROSE_VALUE)
_PROSE = re.compile(_PROSE_SOURCE)
_PROSE_ANY_CASE = re.compile(_PROSE_SOURCE, re.I)
"""A credential word, maybe `is` or `set to`, then a value (checked by `_prose_secret`)."""
_PROSE_NAMED = re.compile(r"\b([A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+|[a-z]+(?:[A-Z][a-z0-9]*)+)`?[ \t]+"
                          + _PROSE_LINKS + _PROSE_VALUE)
"""A setting's name in a sentence, then its value (`Set the DATABASE_PASSWORD env var to …`): counted when the name
says secret as an assignment's would (`name_strength`)."""
_CREDENTIAL_WORD = re.compile(r"(?i)\b(?:tokens?|passwords?|passwd|passphrase|secrets?|api[ _-]?keys?|credentials?)\b")
_NAMED_IN_PROSE = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+|[a-z]+(?:[A-Z][a-z0-9]*)+")
"""A setting's name in a sentence (`DB_PASSWORD`, `apiToken`): `_CREDENTIAL_WORD` does not see the word inside it."""
_CALL_ARGUMENT = re.compile(r"""\(\s*(?P<q>["'`])(?P<value>[^"'`\\\n]{8,500})(?P=q)""")
_CALLEE = re.compile(r"[A-Za-z_][\w.]{0,63}$")
_FENCE = re.compile(r"^[ \t]*(?P<mark>```|~~~)[^\n]*\n(?P<body>.*?)(?:^[ \t]*(?P=mark)|\Z)", re.M | re.S)
"""A fenced block, or one left open to the end of the text (a title cut short, a note cut at its limit)."""
_CODE_SPAN = re.compile(r"```[A-Za-z]*[ \t]+(?P<fenced>[^`\s]{12,200})[ \t]*```|`(?P<span>[^`\s]{12,200})`")
"""A value alone in a code span, or in a fence that git joined onto its subject line (`` ```text Tjt4… ``` ``)."""
_SPAN_WORD = re.compile(r"(?i)\b(?:token|password|passwd|passphrase|secret|api[ _-]?key|pwd)\b")
_SPAN_NAME_WORDS = 5
"""A code span's value is named by a credential word (singular: "1,961 tokens, with `routing.py:58-80`" counts
tokens) or a setting's name among the five words before it."""
RANDOM_MIN_CHARS = 16
RANDOM_MIN_BITS = 3.0
"""A value under a name that only says `key` or `auth` counts when it has at least this many characters, letters
and digits or both cases, and this many bits of entropy per character (a UUID has 3.6; `created_at_index` has
3.3 but one case and no digit)."""


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
    name = path.rsplit("/", 1)[-1]  # not PurePosixPath's: a freshness look asks for every file of the tree
    if _SECRET_NAME.match(name) and not name.endswith(_EXAMPLE_SUFFIXES):
        return True
    return bool(_PATH_MAY_HOLD_SECRET.search(path) and find_secrets(path))


def find_secrets(text: str) -> list[SecretHit]:
    """Every secret in text, in order and without overlaps. One verdict for a text wherever it comes from: a
    file being indexed, a memory's field, a search hit or a context document."""
    if not text:
        return []
    hits = (_format_hits(text) + _assignment_hits(text) + _pair_hits(text) + _joined_hits(text) + _prose_hits(text)
            + _call_hits(text) + _fenced_hits(text) + _span_hits(text))
    hits.sort(key=lambda h: (h.start, -h.end, h.kind))  # the same kind for the same span, whatever found it first
    merged: list[SecretHit] = []
    for hit in hits:
        if merged and hit.start < merged[-1].end:
            last = merged[-1]
            merged[-1] = SecretHit(last.kind, last.start, max(last.end, hit.end))
        else:
            merged.append(hit)
    return merged


def redact(text: str) -> tuple[str, int]:
    """Replace every secret value with a marker; returns the new text and how many were replaced."""
    hits = find_secrets(text)
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


def _format_hits(text: str) -> list[SecretHit]:
    data = text.encode("utf-8", "surrogatepass")
    findings = [f for f in vendor_scanner().scan(data) if f.visible]
    if not findings:
        return []
    spans = [(f.location["start_offset"], f.location["end_offset"], f) for f in findings]
    to_char = _char_offsets(data, sorted({o for s, e, _ in spans for o in (s, e)}), ascii_only=len(data) == len(text))
    hits = []
    for start, end, finding in spans:
        start, end, kind = to_char[start], to_char[end], vendor_kind(finding.rule_id)
        if end > start and _counts(kind, text[start:end]):
            hits.append(SecretHit(kind, start, end))
    return hits


def _counts(kind: str, value: str) -> bool:
    """Whether a format's match is a secret: not a placeholder, and a real password where any may be written."""
    if _is_placeholder(value):
        return False
    if kind in BASIC_KINDS and _basic_password(value) is None:
        return False
    if kind in MIXED_KINDS and not (re.search(r"\d", value) and re.search(r"[A-Za-z]", value)):
        return False
    return kind not in JUDGED_KINDS or _real_password(value)


def _char_offsets(data: bytes, offsets: list[int], ascii_only: bool) -> dict[int, int]:
    """Byte offsets into UTF-8 data as character offsets, decoding each stretch between them once."""
    if ascii_only:
        return {o: o for o in offsets}
    out, chars, previous = {}, 0, 0
    for offset in offsets:
        chars += len(data[previous:offset].decode("utf-8", "ignore"))
        out[offset], previous = chars, offset
    return out


def _basic_password(value: str) -> str | None:
    """The password of an HTTP Basic credential (base64 of `user:password`), or None when value is not one."""
    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    return decoded.split(":", 1)[1] if ":" in decoded and decoded.isprintable() else None


def _real_password(value: str) -> bool:
    """A password someone may have written as an example (`user:password`, `admin:secret`, `a%20secret`) is not
    counted; a plausible one is. Basic credentials are judged by their password."""
    value = unquote(value)
    password = _basic_password(value) if len(value) >= 8 else None
    return plausible_value(password if password is not None else value, quoted=True)


def _assignment_hits(text: str) -> list[SecretHit]:
    hits: list[SecretHit] = []
    # Matching the lowercased text finds `Token`, `TOKEN` and `token` with one short pattern; the spans carry over
    # whenever lowercasing kept the length (it does except for a few non-ASCII letters).
    lowered = text.lower()
    words = keyword_pattern().finditer(lowered) if len(lowered) == len(text) else keyword_pattern(re.I).finditer(text)
    name_end = -1
    for m in words:
        if m.start() < name_end:  # a second secret word in a name already judged (`SECRET_KEY`)
            continue
        before = _NAME_BEFORE.search(text, max(0, m.start() - 64), m.start())
        after = _NAME_AFTER.match(text, m.end())
        assert before is not None and after is not None  # both match the empty string
        name_start, name_end = before.start(), after.end()
        strength = name_strength(text[name_start:name_end])
        if strength is None:
            continue
        a = _ASSIGNMENT.match(text, name_end)
        if a is None:
            continue
        quoted = a.group("quoted") is not None
        group = "quoted" if quoted else "bare"
        if plausible_value(a.group(group), quoted, weak=strength == "weak"):
            hits.append(SecretHit("secret", *a.span(group)))
    return hits


def _joined_hits(text: str) -> list[SecretHit]:
    """Formats split over adjacent string literals (`"sk_live_51Hq" "LyjWDarjtT1zdp7dc"`, joined by the compiler
    or a `+`): the literals of each run are joined and scanned, and a secret that crosses from one literal into the
    next is redacted from its first literal to its last, the quotes between included."""
    if '"' not in text and "'" not in text:
        return []
    hits = []
    for run in _ADJACENT_LITERALS.finditer(text):
        literals = list(_LITERAL.finditer(run.group(0)))
        starts, joined = [], ""
        for literal in literals:
            starts.append((len(joined), run.start() + literal.start() + 1))
            joined += literal.group(0)[1:-1]
        for hit in _format_hits(joined):
            first = max(i for i, (at, _) in enumerate(starts) if at <= hit.start)
            last = max(i for i, (at, _) in enumerate(starts) if at < hit.end)
            if first == last:
                continue  # within one literal: found in the text itself
            start = starts[first][1] + hit.start - starts[first][0]
            end = starts[last][1] + hit.end - starts[last][0]
            hits.append(SecretHit(hit.kind, start, end))
    return hits


def _prose_hits(text: str) -> list[SecretHit]:
    """A credential word followed by a value that could only be a credential, in prose (`ran deploy with token
    Tjt4TY!mQU9RGZq#lswA`): no assignment, so only values that look random count (12+ characters, letters and
    digits with a symbol or both cases, 3.5 bits of entropy per character, not a name, a path or a version)."""
    hits = []
    lowered = text.lower()  # a lowercase pattern on lowered text: `re` is several times slower with IGNORECASE
    found = _PROSE.finditer(lowered) if len(lowered) == len(text) else _PROSE_ANY_CASE.finditer(text)
    for m in found:
        value = text[m.start(1):m.end(1)].rstrip(".,:;!?")
        if _prose_secret(value):
            hits.append(SecretHit("secret", m.start(1), m.start(1) + len(value)))
    for m in _PROSE_NAMED.finditer(text):
        value = text[m.start(2):m.end(2)].rstrip(".,:;!?")
        if name_strength(m.group(1)) == "strong" and _prose_secret(value):
            hits.append(SecretHit("secret", m.start(2), m.start(2) + len(value)))
    return hits


def _call_hits(text: str) -> list[SecretHit]:
    """A call whose callee's name says secret, given a literal (`set_api_key("…")`, `Token.new('…')`): the callee
    is the value's name, judged as an assignment's name is."""
    hits = []
    for m in _CALL_ARGUMENT.finditer(text):  # led by `(` and a quote, so `re` skips the rest of the text fast
        found = _CALLEE.search(text, max(0, m.start() - 64), m.start())
        if found is None:
            continue
        callee = found.group(0).removesuffix(".new")  # Ruby's `Token.new("…")` names its class
        strength = name_strength(callee)
        if strength and plausible_value(m.group("value"), quoted=True, weak=strength == "weak"):
            hits.append(SecretHit("secret", *m.span("value")))
    return hits


def _fenced_hits(text: str) -> list[SecretHit]:
    """A fenced block under a heading or a sentence that names a credential (`## Deploy token`, then the value
    alone in the fence): the words above are the value's name. Only a line that is one random-looking value
    counts (as in prose)."""
    if "```" not in text and "~~~" not in text:
        return []
    hits = []
    for m in _FENCE.finditer(text):
        if not _names_a_credential(text[max(0, m.start() - 300):m.start()].rstrip().rsplit("\n", 1)[-1]):
            continue
        offset = m.start("body")
        for line in m.group("body").splitlines(keepends=True):
            value = line.strip()
            if value and (_prose_secret(value) or _random_key(value)):
                start = offset + line.index(value)
                hits.append(SecretHit("secret", start, start + len(value)))
            offset += len(line)
    return hits


def _span_hits(text: str) -> list[SecretHit]:
    """A code span after words that name a credential on its line (``the token is `Tjt4…` ``, ``Set `DB_PASSWORD`
    to `…` ``): judged as a value in prose is."""
    if "`" not in text:
        return []
    hits = []
    for m in _CODE_SPAN.finditer(text):
        group = "fenced" if m.group("fenced") is not None else "span"
        line = text[max(text.rfind("\n", 0, m.start()) + 1, m.start() - 120):m.start()]
        before = " ".join(line.split()[-_SPAN_NAME_WORDS:])
        if (_SPAN_WORD.search(before) or any(name_strength(n) == "strong" for n in _NAMED_IN_PROSE.findall(before))) \
                and _prose_secret(m.group(group)):
            hits.append(SecretHit("secret", *m.span(group)))
    return hits


def _names_a_credential(words: str) -> bool:
    """Words that say what follows is a credential: a credential word, or a setting's name that says secret."""
    return bool(_CREDENTIAL_WORD.search(words)) or any(name_strength(name) == "strong"
                                                        for name in _NAMED_IN_PROSE.findall(words))


def _prose_secret(value: str) -> bool:
    if len(value) < 12 or any(c.isspace() for c in value) or _is_placeholder(value) or "://" in value or _looks_like_path(value):
        return False
    both_cases = bool(re.search(r"[a-z]", value) and re.search(r"[A-Z]", value))
    if not re.search(r"\d", value) and not (both_cases and re.search(r"[^\w.-]", value)):
        return False  # without a digit, both cases and a symbol that names never hold (`Avstq%VVPqzPp@tEJQzh`)
    if not re.search(r"[A-Za-z]", value):
        return False
    if not (re.search(r"[^A-Za-z0-9]", value) or both_cases):
        return False
    if _VERSION.fullmatch(value) or _ENV_NAME.fullmatch(value) or _DOTTED_NAME.fullmatch(value) or _wordy(value):
        return False
    if _IDENTIFIER.fullmatch(value):  # `cl100k_base_encoding`, `test_user2_fixture`: names, not values
        return False
    return _entropy(value) >= 3.5


def _random_key(value: str) -> bool:
    """A key of letters and digits alone, long and random (`f3a9c1d2…`, 32 hex digits): a secret when the words
    above its fenced block name a credential, though in running prose it could be a commit or a checksum."""
    return (len(value) >= 20 and value.isascii() and value.isalnum() and bool(re.search(r"\d", value))
            and bool(re.search(r"[A-Za-z]", value)) and _entropy(value) >= RANDOM_MIN_BITS)


def _pair_hits(text: str) -> list[SecretHit]:
    hits = []
    for value_pattern, name_pattern, reach in _PAIR_VALUES:
        for m in value_pattern.finditer(text):
            named = name_pattern.search(text, max(0, m.start() - reach), m.start())
            strength = name_strength(named.group(1)) if named else None
            if strength and plausible_value(m.group(1), quoted=True, weak=strength == "weak"):
                hits.append(SecretHit("secret", *m.span(1)))
    return hits


def name_strength(name: str) -> str | None:
    """Whether a setting's name says its value is a secret: "strong" (`password`, `DIGITALOCEAN_TOKEN`, `API_KEY`),
    "weak" (only `key` or `auth`: `cache_key`, `auth`), or None (`author`, `password_file`, `token_count`)."""
    words = [w.lower() for w in _NAME_WORDS.findall(name)]
    if not words or words[-1] in _NOT_VALUE_SUFFIXES:
        return None
    strength = None
    for i, word in enumerate(words):
        if any(s in word for s in SECRET_WORDS_WITHIN) or word.endswith(SECRET_WORDS_ENDING) or word == "pass":
            return "strong"
        if word in SECRET_WORDS_WHOLE or word.endswith(("key", "auth")):
            if word in ("key", "keys") and i > 0 and words[i - 1] in _SECRET_KEY_QUALIFIERS:
                return "strong"
            strength = "weak"
    return strength


def plausible_value(value: str, quoted: bool, weak: bool = False) -> bool:
    """Whether an assigned value looks like a secret rather than a reference, a type, a placeholder or prose."""
    if len(value) < (4 if quoted else 6) or " " in value or _is_placeholder(value):
        return False
    lowered = value.lower()
    has_digit = any(c.isdigit() for c in value)
    if lowered in _PLACEHOLDER_WORDS or value.isdigit():
        return False
    if not has_digit and keyword_pattern().search(lowered) and _wordy(value):  # `get_token`, `passwordHash`
        return False
    if _ENV_NAME.fullmatch(value) or _looks_like_path(value) or "://" in value or _VERSION.fullmatch(value):
        return False
    if not re.search(r"[A-Za-z0-9]", value) or _is_sequential(value) or _WORD.fullmatch(value):
        return False
    if not has_digit and _DOTTED_NAME.fullmatch(value):  # `settings.SECRET_KEY`, `"context.eval_ctx"`
        return False
    if not quoted and (any(c in value for c in "()[]{}<>") or _SNAKE_NAME.fullmatch(value)
                       or (not has_digit and _wordy(value))):  # code (`token = next_token`, `auth: AuthConfig`)
        return False
    if weak:
        if _UUID.fullmatch(value) or _KEY_PATH.fullmatch(value):  # a row's id, a cache key's namespace
            return False
        return len(value) >= RANDOM_MIN_CHARS and _entropy(value) >= RANDOM_MIN_BITS and _looks_random(value)
    # A bare word in prose or a config schema ("password: required") is not a secret; one with a digit, a symbol
    # or inner capitals is.
    return quoted or bool(re.search(r"[^A-Za-z]", value) or re.search(r"[A-Z]", value[1:]))


def _looks_random(value: str) -> bool:
    """Letters and digits, or both cases without separators or whole words (`X-Forwarded-Prefix` and
    `someVariableName` are names; `EXOLwYCGNbaALJfrIiz` is not)."""
    if any(c.isdigit() for c in value) and re.search(r"[A-Za-z]", value):
        return True
    if len(value) >= 24 and _entropy(value) >= 4.0:
        return True
    if not (re.search(r"[a-z]", value) and re.search(r"[A-Z]", value)) or re.search(r"[-_.]", value):
        return False
    return not _wordy(value)


def _wordy(value: str) -> bool:
    """Made of words as names are (`get_token`, `authMiddleware`), not of the short runs random text splits into."""
    parts = _NAME_WORDS.findall(value)
    return bool(parts) and all(len(p) >= 3 for p in parts)


def _looks_like_path(value: str) -> bool:
    """`/etc/app.conf`, `./keys/dev`, `~/.ssh/id_rsa`; not a base64 value that happens to start with `/`."""
    if not _PATH.fullmatch(value):
        return False
    return any(c in value for c in "._-") or not any(c.isdigit() for c in max(value.split("/"), key=len))


def _entropy(value: str) -> float:
    counts = Counter(value)
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())


def _is_placeholder(value: str) -> bool:
    if len(set(value.lower())) <= 2:
        return True
    return bool(_PLACEHOLDER_MARKS.search(value))


def _is_sequential(value: str) -> bool:
    lowered = value.lower()
    return any(lowered in seq for seq in ("abcdefghijklmnopqrstuvwxyz", "0123456789" * 2, "qwertyuiop"))
