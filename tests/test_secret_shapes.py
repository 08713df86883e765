"""Secrets by shape and by neighbourhood: credentials that passed every gate because no keyword stood beside them
(a Telegram token in a constructor, Twilio's SID and token as a call's arguments, a Google key in a script URL, a
New Relic key in prose), because they were split over two string literals, or because the word before them was
prose, not an assignment. Each must be caught by the detector and so at every gate; two ordinary lines must not.

Every value is fake: drawn at test time from a seeded generator in the vendor's documented shape.
"""

from __future__ import annotations

import json
import random
import string

import pytest
from cortex_tui.core.engine import Engine
from cortex_tui.core.errors import CortexError
from cortex_tui.core.records import MemoryDraft
from cortex_tui.core.secrets.secrets import find_secrets, redacted

from .conftest import commit_file
from .test_serve import runtime  # noqa: F401  (a fixture)

_RNG = random.Random(44)
HEX = "0123456789abcdef"
URLSAFE = string.ascii_letters + string.digits + "_-"


def _draw(chars: str, n: int) -> str:
    return "".join(_RNG.choice(chars) for _ in range(n))


TELEGRAM = f"61{_draw(string.digits, 8)}:AA{_draw(URLSAFE, 33)}"
TWILIO_SID, TWILIO_TOKEN = f"AC{_draw(HEX, 32)}", _draw(HEX, 32)
MAPS_KEY = f"AIza{_draw(URLSAFE, 35)}"
STRIPE_HEAD, STRIPE_TAIL = f"sk_live_{_draw(string.ascii_letters + string.digits, 6)}", \
    _draw(string.ascii_letters + string.digits, 24)
PROSE_PASSWORD = "Tjt4TY!mQU9RGZq#lswA"
FENCED = f"{_draw(string.ascii_letters, 4)}!{_draw(string.digits, 3)}{_draw(string.ascii_letters + string.digits, 10)}"
QUERY_KEY = _draw(string.ascii_letters + string.digits, 28)
CALLED = _draw(string.ascii_letters + string.digits, 24)
NEW_RELIC = f"NRAK-{_draw(string.ascii_uppercase + string.digits, 27)}"
NAMED_FENCED = f"{_draw(string.ascii_letters, 5)}%{_draw(string.digits, 2)}{_draw(string.ascii_letters + string.digits, 12)}"
NO_DIGIT_FENCED = f"{_draw(string.ascii_uppercase, 2)}{_draw(string.ascii_lowercase, 3)}%{_draw(string.ascii_letters, 7)}" \
    f"@{_draw(string.ascii_letters, 6)}"
HEX_FENCED = _draw(HEX, 32)
SPANNED = f"{_draw(string.ascii_letters, 6)}#{_draw(string.digits, 3)}{_draw(string.ascii_letters + string.digits, 9)}"
NEW_RELIC_ENDING = f"NRAK-{_draw(string.ascii_uppercase + string.digits, 27)}"
SET_BY_NAME = f"{_draw(string.ascii_letters, 5)}!{_draw(string.digits, 3)}{_draw(string.ascii_letters + string.digits, 8)}"
SET_TO = f"{_draw(string.ascii_letters, 4)}#{_draw(string.digits, 4)}{_draw(string.ascii_letters + string.digits, 8)}"

CASES = {
    "telegram in a constructor": (f'bot = telebot.TeleBot("{TELEGRAM}")', [TELEGRAM]),
    "twilio as a call's arguments": (f'client = Twilio::REST::Client.new("{TWILIO_SID}", "{TWILIO_TOKEN}")',
                                     [TWILIO_SID, TWILIO_TOKEN]),
    "google key in a script url": (f'<script src="https://maps.googleapis.com/maps/api/js?key={MAPS_KEY}'
                                   '&callback=initMap"></script>', [MAPS_KEY]),
    "stripe over two literals": (f'STRIPE = "{STRIPE_HEAD}" "{STRIPE_TAIL}"', [STRIPE_HEAD + STRIPE_TAIL, STRIPE_TAIL]),
    "a password after 'token' in prose": (f"ran deploy with token {PROSE_PASSWORD}", [PROSE_PASSWORD]),
    "a vendor shape without its variable": (f"the worker uses {NEW_RELIC}", [NEW_RELIC]),
    "a heading above a fenced block": (f"## Staging deploy token\n\n```\n{FENCED}\n```", [FENCED]),
    "a setting's name in the sentence above a fenced block": (
        f"Set `DB_PASSWORD` to the following value\n```text\n{NAMED_FENCED}\n```", [NAMED_FENCED]),
    "a password without a digit in a fenced block": (
        f"The staging deploy password is:\n\n```\n{NO_DIGIT_FENCED}\n```", [NO_DIGIT_FENCED]),
    "a code span after a setting's name": (f"Set `DB_PASSWORD` to `{SPANNED}`", [SPANNED]),
    "a code span after a credential word": (f"the staging token is `{PROSE_PASSWORD}`", [PROSE_PASSWORD]),
    "a hex key in a fenced block": (f"Use this API key for the geocoder:\n\n```\n{HEX_FENCED}\n```", [HEX_FENCED]),
    "a call's callee": (f'client.set_api_key("{CALLED}")', [CALLED]),
    "a URL's key= parameter": (f"curl 'https://api.weather-svc.net/v2/forecast?key={QUERY_KEY}&city=Oslo'",
                               [QUERY_KEY]),
    "a vendor shape ending a sentence": (f"Billing reads its metrics with {NEW_RELIC_ENDING}.", [NEW_RELIC_ENDING]),
    "a setting's name, then 'env var to'": (f"Set the DATABASE_PASSWORD env var to {SET_BY_NAME} on staging",
                                            [SET_BY_NAME]),
    "a credential word, then 'set to'": (f"the deploy password is now set to {SET_TO}", [SET_TO]),
    # Last: a fence left open runs to the end of the text (in a file made of these lines too).
    "a fenced block cut short": (f"The deploy password:\n\n```\n{NAMED_FENCED[:16]}", [NAMED_FENCED[:16]]),
}
ORDINARY = ['ROW = {"key": "3f2c9a1e-7b4d-4e8f-9a6c-2d1b0e5f7a83"}',
            'cache_key = "user:profile:v2:" + str(user_id)',
            "GET /items?key=value2&page=3",
            "Set `GITHUB_TOKEN` in the workflow:\n\n```yaml\nenv:\n  GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}\n```",
            "The password rules, as `PASSWORD_POLICY` says:\n\n```\nX-Password-Policy\nCorrectHorse!Battery\n```",
            "Pin the release with `RELEASE_TOKEN_SHA`:\n\n```\npip install flask==3.1.0\n```",
            "before this change 1,961 tokens, with `routing.py:58-80` too",
            "the tokenizer is `cl100k_base_encoding`, and token hashing uses `bcrypt.hashpw`",
            "Set the DATABASE_URL env var to postgres://db.internal/app2024",
            "set MAX_TOKENS_PER_REQUEST to 4096, and the token_count is 12345678901234",
            "Set the API_TOKEN env var to the value from the vault."]


def leaked(text: str) -> list[str]:
    return [name for name, (_, values) in CASES.items() for value in values if value in text]


@pytest.mark.parametrize("name", list(CASES))
def test_each_shape_is_found_and_only_its_value_is_redacted(name):
    line, values = CASES[name]
    assert find_secrets(line), line
    shown = redacted(line)
    assert all(v not in shown for v in values) and "«redacted" in shown, shown
    before = line[:min(line.index(v) for v in [*values, STRIPE_HEAD] if v in line)]
    assert shown.startswith(before), (before, shown)  # the name, the call, the words before stay readable


@pytest.mark.parametrize("line", ORDINARY)
def test_ordinary_keys_are_not_secrets(line):
    assert find_secrets(line) == [] and redacted(line) == line


def test_the_keywordless_rules_are_those_of_the_installed_rule_set():
    """`secret_rules_keywordless.yml` is generated from the installed rule set: a package upgrade that changes
    its rules must regenerate it (`python -m cortex_tui.core.secrets.keywordless`)."""
    from cortex_tui.core.secrets.keywordless import installed_rules_yaml
    from cortex_tui.core.secrets.secret_rules import KEYWORDLESS_FILE

    assert KEYWORDLESS_FILE.read_text(encoding="utf-8") == installed_rules_yaml()


def test_every_shape_is_caught_at_every_gate(repo, tmp_path):
    """Files indexed, commit messages, memory fields, import records and agent-log fields."""
    lines = [line for line, _ in CASES.values()]
    commit_file(repo, "web/index.html", "<html><body>\n" + "\n".join(lines) + "\n</body></html>\n", "Add the page")
    commit_file(repo, "docs/deploy.md", "# Deploy\n\n" + "\n\n".join(lines) + "\n", "Write the deploy notes")
    for n, line in enumerate(lines):
        commit_file(repo, f"notes/{n}.txt", f"{n}\n", f"Deploy step {n}: {line}")
    engine = Engine(repo)
    engine.code_index(create=True).update(embed=False)
    chunks = engine.code_index().chunks.to_arrow().to_pylist()
    assert {c["path"] for c in chunks} >= {"web/index.html", "docs/deploy.md"}
    assert leaked(json.dumps(chunks)) == []
    assert leaked(json.dumps([c.subject for c in engine.git(20).commits])) == []

    for line in lines:
        for draft in (MemoryDraft(line), MemoryDraft("Deploy notes", title=line), MemoryDraft("Deploy", context=line)):
            with pytest.raises(CortexError, match="looks like it contains a secret"):
                engine.remember(draft)
    agent = engine.agent_log(create=True)
    agent.init("Deploy the orders service")
    for line in lines:
        with pytest.raises(CortexError, match="looks like it contains a secret"):
            agent.log_ota(line, "", "")
    from cortex_tui.core.store.importer import plan_import

    records = tmp_path / "notes.jsonl"
    records.write_text("".join(json.dumps({"text": line}) + "\n" for line in lines))
    plan = plan_import(records)
    assert len(plan.bad) == len(lines) and plan.entries == []
    assert all("contains a secret" in b.reason for b in plan.bad)


async def test_every_shape_is_refused_through_the_resident_server_and_mcp(repo, runtime):
    from .test_mcp import server
    from .test_serve import cortex, status

    lines = [line for line, _ in CASES.values()]
    for line in lines:
        out = cortex(repo, "remember", line)
        assert out.returncode == 1 and b"looks like it contains a secret" in out.stderr, (line, out.stderr)
        assert out.stderr.count(b"\n") == 1 and not leaked(out.stderr.decode())
    assert status(repo)["running"]
    async with server(repo, "--no-watch") as client:
        await client.call_tool("agent_init", {"goal": "Deploy the orders service"})
        for line in lines:
            for tool, arguments in (("remember", {"text": line}), ("agent_log", {"observation": line})):
                result = await client.call_tool(tool, arguments)
                assert result.is_error and "looks like it contains a secret" in result.content[0].text, (tool, line)
    assert json.loads(cortex(repo, "list", "--json").stdout) == []
