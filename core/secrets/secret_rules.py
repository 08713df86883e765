"""The rules that recognise secrets, as data: a maintained rule set first, then our own for what it leaves out.

The maintained set is kingfisher's (MongoDB, `kingfisher-secret-scanner`): the betterleaks rules (the gitleaks
family: ~460 vendor formats with their allowlists) and Google's veles detectors. Ours are in `secret_rules.yml`
beside this file, in the same rule format: kingfisher compiles both into one Vectorscan database and runs it
in-process from Rust, so one pass over a text finds every format. An upgrade of the package brings new formats;
nothing here lists them. The compiled database is kept in cortex's cache directory (building it takes seconds,
loading it a fraction of one).

The assignment layer — a name that says secret, then a plausible value — is in `core/secrets/secrets.py`; the words it
looks for are here. To add a format, add a rule to `secret_rules.yml` and a form to `tests/secret_forms.py`.
"""

from __future__ import annotations

import hashlib
import re
import threading
from functools import lru_cache
from pathlib import Path

from ..locations import cache_dir
from ..versions import distribution_version

RULES_FILE = Path(__file__).with_name("secret_rules.yml")
KEYWORDLESS_FILE = Path(__file__).with_name("secret_rules_keywordless.yml")
"""The maintained rules with a distinctive value, without their keyword (generated: see keywordless.py)."""

JUDGED_KINDS = frozenset({
    # the rule set's rules that capture any password rather than a format
    "generic-credential-uri", "curl-auth-user", "curl-auth-header", "hashicorp-tf-password", "nuget-config-password",
    # ours
    "url-password", "netrc-password", "curl-password", "npm-auth", "http-credential", "docker-auth",
})
"""Kinds whose value is a password anyone may write (`postgres://user:password@host` in docs): it counts only when
it is plausible as an assignment's value would be, after URL and `user:password` base64 decoding."""
BASIC_KINDS = frozenset({"docker-auth"})
"""Kinds whose value must decode as HTTP Basic's base64 `user:password` (any base64 word is not one)."""
MIXED_KINDS = frozenset({"http-credential"})
"""Kinds whose value must mix letters and digits ("a bearer token" in prose is not a credential)."""


SECRET_WORDS_WITHIN = ("secret", "passw", "passphrase", "credential", "apikey")
"""A word of a setting's name containing one of these says its value is secret (`DB_PASSWORD`, `clientSecret`)."""
SECRET_WORDS_ENDING = ("token", "tokens", "creds", "pwd")
"""…and one ending in these (`DIGITALOCEAN_TOKEN`, `authtoken`; `tokenizer` is not one)."""
SECRET_WORDS_WHOLE = ("pass", "key", "keys", "auth", "private")
"""…and these as a whole word (`SMTP_PASS`, `API_KEY`, `auth`; not `compass`, `author`). `key`, `auth` and
`private` alone (`cache_key`, `auth`) hold ordinary values as often as secrets: there the value must also look
random; `API_KEY`, `signing_key` and the like are as sure as `password`."""


@lru_cache(maxsize=2)
def keyword_pattern(flags: int = 0) -> re.Pattern[str]:
    """Where a name may hold a secret word, in lowercased text (unless `flags` has re.I): one short alternation,
    fast in `re`; `core/secrets/secrets.py` then reads the whole name and judges it."""
    return re.compile("secret|token|pass|cred|pwd|key|auth|priv", flags)


_vendor_lock = threading.Lock()
_vendor: list[object] = []


def vendor_scanner():
    """The scanner of every format (built once per process, thread-safe; it is shared by every thread)."""
    if _vendor:
        return _vendor[0]
    with _vendor_lock:
        if not _vendor:
            from kingfisher_sdk import Rules, Scanner

            directory = cache_dir() / "secret-rules"
            directory.mkdir(parents=True, exist_ok=True, mode=0o700)
            rules = Rules([RULES_FILE, KEYWORDLESS_FILE], builtins=True, confidence="low", cache_dir=directory)
            # base64=False: decoding every base64 run costs 4x the scan and finds encoded keys nobody reads.
            _vendor.append(Scanner(rules, base64=False, dedup=False, redact=False))
    return _vendor[0]


def rules_version() -> str:
    """The rule sets the detector runs: kingfisher's built-in ones by its package's version, ours by their count
    and the start of their file's hash (any changed rule changes it)."""
    import yaml  # only here: every process that checks a field imports this module, few ask for its version

    text = RULES_FILE.read_bytes()
    ours = len(yaml.safe_load(text)["rules"])
    vendor = distribution_version("kingfisher-secret-scanner") or "(not installed)"
    return (f"kingfisher-secret-scanner {vendor} built-in rules; cortex's {ours} rules "
            f"(secret_rules.yml {hashlib.sha256(text).hexdigest()[:12]})")


def vendor_kind(rule_id: str) -> str:
    """A rule's id as a kind shown to people: `betterleaks.digitalocean-pat` → `digitalocean-pat`,
    `cortex.aws-key-id` → `aws-key-id`."""
    name = rule_id.split(".", 1)[-1].rsplit("/", 1)[-1]
    return re.sub(r"\.\d+$", "", name)
