"""The rules that recognise secrets, as data: detect-secrets' token detectors, then our own for what they miss.

detect-secrets (Yelp) maintains the token formats of its plugins as compiled regular expressions (`denylist`); we
read them from the installed package rather than copying them, so an upgrade brings new formats. Its scanner is
line- and file-based and keeps global settings, so only the patterns are used; the spans, the allowlist and the
keyword rules are ours (`core/secrets.py`). To add a format, append a `Rule` to `EXTRA_RULES` with a test in
`tests/test_secrets.py`.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from functools import lru_cache


@dataclass(frozen=True)
class Rule:
    """One secret format. `value_group`: the secret is the pattern's last group (the rest is context that stays
    readable, like `postgres://user:` before a password); otherwise it is the whole match."""

    kind: str
    pattern: re.Pattern[str]
    value_group: bool = False
    multiline: bool = False
    """The secret may span lines (key blocks); other spans end at the first quote, backslash or whitespace."""
    anchor: str = ""
    """A substring every match contains: texts without it skip the pattern (a substring test is far cheaper)."""


# (module, class, kind, value_group, which patterns of its denylist: None = all)
_DETECT_SECRETS = (
    ("aws", "AWSKeyDetector", "AWS key", True, None),
    ("azure_storage_key", "AzureStorageKeyDetector", "Azure storage key", False, None),
    ("basic_auth", "BasicAuthDetector", "URL password", True, None),
    ("discord", "DiscordBotTokenDetector", "Discord token", False, None),
    ("github_token", "GitHubTokenDetector", "GitHub token", False, None),
    ("gitlab_token", "GitLabTokenDetector", "GitLab token", False, None),
    ("mailchimp", "MailchimpDetector", "Mailchimp key", False, None),
    ("openai", "OpenAIDetector", "OpenAI key", False, None),
    ("pypi_token", "PypiTokenDetector", "PyPI token", False, None),
    ("sendgrid", "SendGridDetector", "SendGrid key", False, None),
    ("slack", "SlackDetector", "Slack token", False, None),
    ("square_oauth", "SquareOAuthDetector", "Square secret", False, None),
    ("stripe", "StripeDetector", "Stripe key", False, None),
    ("telegram_token", "TelegramBotTokenDetector", "Telegram token", False, None),
    ("twilio", "TwilioKeyDetector", "Twilio key", False, None),
    # Its second pattern (`AP` + 9 characters) matches ordinary capitalised words in quotes; the token one is kept.
    ("artifactory", "ArtifactoryDetector", "Artifactory token", False, (0,)),
)

_B64 = r"[A-Za-z0-9+/]"
EXTRA_RULES: tuple[Rule, ...] = (
    Rule("private key", re.compile(
        r"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----"
        r"(?:.*?-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----|[A-Za-z0-9+/=\s\\:,-]*)", re.S), multiline=True, anchor="PRIVATE KEY"),
    Rule("private key", re.compile(r"PuTTY-User-Key-File-\d: .*"), anchor="PuTTY-User-Key-File-"),
    Rule("AWS key", re.compile(r"(?<![A-Z0-9])(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|ANPA|ANVA)[A-Z0-9]{16}")),
    Rule("AWS secret key", re.compile(r"(?i)aws.{0,20}?secret.{0,20}?[=:]\s*['\"]?([A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])"),
         value_group=True),
    Rule("GitHub token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{50,})"), anchor="_"),
    # OpenAI project, service-account and admin keys carry no `T3BlbkFJ` marker any more; legacy keys are sk- + 48.
    Rule("OpenAI key", re.compile(r"\bsk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,}"), anchor="sk-"),
    Rule("OpenAI key", re.compile(r"\bsk-[A-Za-z0-9]{48}(?![A-Za-z0-9])"), anchor="sk-"),
    Rule("Anthropic key", re.compile(r"\bsk-ant-[A-Za-z0-9_-]{30,}"), anchor="sk-ant-"),
    Rule("Stripe key", re.compile(r"\b[sr]k_(?:live|test)_[0-9A-Za-z]{16,}"), anchor="k_"),
    Rule("Hugging Face token", re.compile(r"\bhf_[A-Za-z0-9]{30,40}(?![A-Za-z0-9])"), anchor="hf_"),
    Rule("npm token", re.compile(r"\bnpm_[A-Za-z0-9]{36}(?![A-Za-z0-9])"), anchor="npm_"),
    Rule("npm token", re.compile(r"(?i)_auth(?:token)?\s*=\s*(\S+)"), value_group=True),
    Rule("Slack token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}"), anchor="xox"),
    Rule("Slack webhook", re.compile(r"https://hooks\.slack\.com/services/[A-Za-z0-9/_]{20,}"), anchor="hooks.slack.com"),
    Rule("Google API key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}"), anchor="AIza"),
    Rule("JSON web token", re.compile(r"\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}"), anchor="eyJ"),
    # An HTTP credential: long enough and mixing letters and digits, so "a bearer token" in prose is left alone.
    Rule("bearer token", re.compile(
        r"(?i)\b(?:bearer|basic|token)\s+((?=[A-Za-z0-9._~+/-]*\d)(?=[A-Za-z0-9._~+/-]*[A-Za-z])[A-Za-z0-9._~+/-]{12,}=*)"),
        value_group=True),
    # Docker's config.json: "auth" is base64 of user:password (checked in secrets.py, so any base64 word is not).
    Rule("docker auth", re.compile(rf"(?i)\\?[\"']auth\\?[\"']\s*:\s*\\?[\"']({_B64}{{8,}}={{0,2}})\\?[\"']"),
         value_group=True),
    # crypt(3) hashes as in /etc/shadow: MD5, bcrypt, SHA-256/512, yescrypt, scrypt-like; and argon2.
    Rule("password hash", re.compile(r"\$(?:1|2[abxy]?|5|6|7|y|gy)\$[A-Za-z0-9./=,$]{20,}"), anchor="$"),
    Rule("password hash", re.compile(r"\$argon2(?:id|i|d)\$v=\d+\$m=\d+,t=\d+,p=\d+\$[A-Za-z0-9+/]+\$[A-Za-z0-9+/]+"), anchor="$argon2"),
)


@lru_cache(maxsize=1)
def token_rules() -> tuple[Rule, ...]:
    """Every token-format rule: detect-secrets' first, then ours. Loaded on first use (the import takes ~0.1 s)."""
    rules = []
    for module, cls, kind, value_group, which in _DETECT_SECRETS:
        detector = getattr(importlib.import_module(f"detect_secrets.plugins.{module}"), cls)
        patterns = list(detector.denylist)
        chosen = patterns if which is None else [patterns[i] for i in which]
        rules.extend(Rule(kind, p, value_group=value_group and p.groups > 0) for p in chosen)
    return tuple(rules) + EXTRA_RULES


@lru_cache(maxsize=2)
def keywords(flags: int = 0) -> re.Pattern[str]:
    """Names (lowercase unless `flags` has re.I) that say their value is a secret: detect-secrets' keyword list (`password`, `api_key`, `secret`, …)
    plus token names and `pass` as a name's last part (`SMTP_PASS`)."""
    from detect_secrets.plugins.keyword import DENYLIST

    extra = (r"(?:auth|access|api|refresh|bearer|secret|session|private|personal|client)[_-]?token", "passphrase",
             r"(?<=[_.-])pass\b", "credentials?")
    names = [name.replace("_?", "[_-]?") for name in DENYLIST] + list(extra)
    return re.compile("|".join(f"(?:{n})" for n in names), flags)
