"""Secrets: the rules on their own, then a seeded corpus through the real CLI, the MCP server and the LanceDB tables.

Every fake secret is generated here from fragments and a fixed seed (never a literal that looks like a real key),
and filled into the templates of `tests/secret_corpus/`.
"""

from __future__ import annotations

import base64
import json
import random
import shutil
import string
from pathlib import Path

import lancedb
import pytest
from cortex_tui.core.engine import Engine
from cortex_tui.core.errors import CortexError
from cortex_tui.core.records import MemoryDraft
from cortex_tui.core.secrets.secrets import find_secrets, is_secret_path, redact
from cortex_tui.core.store.sql import scan

from .conftest import Cli, commit_file, git
from .test_mcp import call, server

CORPUS = Path(__file__).parent / "secret_corpus"
ROOT = Path(__file__).parents[1]
# No vowels and none of p, w, d, k, s, t, y, x: a random value can never spell a secret's name ("pwd", "key") or
# a placeholder ("xxxx", "example"), whatever the seed.
SAFE = "BCFGHJLMNQRVZbcfghjlmnqrvz23456789"
B64 = string.ascii_letters + string.digits + "+/"


def fake_secrets(seed: int = 13) -> dict[str, str]:
    rng = random.Random(seed)

    def pick(n: int, chars: str = SAFE) -> str:
        return "".join(rng.choice(chars) for _ in range(n))

    def b64url(data: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")

    gh, gl, sk = "gh" + "p_", "gl" + "pat-", "s" + "k-"
    values = {
        "URL_PASSWORD": "pass" + pick(10), "PY_API_KEY": pick(24), "GITHUB": gh + pick(36),
        "OPENAI_PROJECT": sk + "proj-" + pick(48), "OPENAI_LEGACY": sk + pick(48),
        "OPENAI_MARKED": sk + "proj-" + pick(20) + "T3Blbk" + "FJ" + pick(20),
        "STRIPE_TEST": "sk_" + "test_" + pick(24), "STRIPE_LIVE": "sk_" + "live_" + pick(24),
        "HF": "hf" + "_" + pick(34, string.ascii_letters), "SLACK": "xo" + "xb-" + pick(11, "0123456789") + "-"
        + pick(12, "0123456789") + "-" + pick(24), "AWS_ID": "AK" + "IA" + pick(16, "BCFGHJLMNQRVZ234567"),
        "AWS_SECRET": pick(40), "PY_ENV_PASSWORD": pick(16), "YAML_PASSWORD": "hunter2" + pick(6),
        "GITLAB": gl + pick(20), "BEARER": pick(32), "DOCKER_AUTH": base64.b64encode(b"deploy:" + pick(12).encode()).decode(),
        "JSON_PASSWORD": pick(14), "ENV_PASSWORD": pick(14), "NPM_TOKEN": "np" + "m_" + pick(36),
        "SHADOW": "$" + "6$" + pick(8) + "$" + pick(86, B64.replace("+", ".")), "MD_PASSWORD": pick(12),
        "MD_HF": "hf" + "_" + pick(34, string.ascii_letters), "NB_MD_PASSWORD": pick(12), "NB_PASSWORD": pick(12),
        "NB_BEARER": pick(40), "NB_GITHUB": gh + pick(36), "NESTED_GITHUB": gh + pick(36), "NESTED_API_KEY": pick(20),
        "IGNORED_GITHUB": gh + pick(36), "DOTENV_PASSWORD": pick(16), "KEY_BODY": pick(64, B64), "PEM_BODY": pick(64, B64),
        "COMMIT_GITHUB": gh + pick(36), "TITLE_GITHUB": gh + pick(36), "TAG_GITLAB": gl + pick(20),
        "KEY_STRIPE": "sk_" + "live_" + pick(24), "FILES_GITHUB": gh + pick(36), "SYMBOL_GITLAB": gl + pick(20),
        "GOAL_OPENAI": sk + "proj-" + pick(48), "PURPOSE_HF": "hf" + "_" + pick(34, string.ascii_letters),
        "ROADMAP_GITHUB": gh + pick(36), "STEP_PASSWORD": pick(14), "MCP_TITLE_GITHUB": gh + pick(36),
        "MCP_TAG_GITLAB": gl + pick(20), "IMPORT_TITLE_GITHUB": gh + pick(36), "IMPORT_FILE_GITLAB": gl + pick(20),
        "JWT": "",
    }
    values["JWT"] = ".".join([b64url({"alg": "HS256", "typ": "JWT"}), b64url({"sub": pick(12), "n": pick(20)}), pick(43)])
    return values


def _block(kind: str, body: str) -> str:
    edge = "-" * 5
    return f"{edge}BEGIN {kind} PRIVATE KEY{edge}\n{body}\n{edge}END {kind} PRIVATE KEY{edge}"


def build_corpus(repo: Path, values: dict[str, str]) -> None:
    """The templates filled in (`dot.x` → `.x`), a key file, and a commit whose message holds a token."""
    fill = dict(values, KEY_BLOCK=_block("OPENSSH", values["KEY_BODY"]))
    for template in CORPUS.rglob("*"):
        rel = template.relative_to(CORPUS)
        if template.is_dir() or rel.as_posix() == "README.md":
            continue
        target = repo / rel.parent / (("." + rel.name[4:]) if rel.name.startswith("dot.") else rel.name)
        text = template.read_text(encoding="utf-8")
        for name, value in fill.items():
            text = text.replace("{{" + name + "}}", value)
        assert "{{" not in text, f"{rel}: unfilled placeholder"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    (repo / "keys").mkdir()
    (repo / "keys" / "deploy.pem").write_text(_block("RSA", values["PEM_BODY"]) + "\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "Add the orders service")
    commit_file(repo, "CHANGES.md", "# Changes\n\n- rotated the deploy token\n",
                f"Rotate the deploy token, new one is {values['COMMIT_GITHUB']}")


def leaks(text: str, values: dict[str, str]) -> list[str]:
    """Names of the secrets whose value (or, for key blocks, body) appears in text."""
    return [name for name, value in values.items() if value and value in text]


# --- the rules -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("template, kept", [
    ("db:\n  password: {v}\n", "password: «redacted"),
    ("DB_PASSWORD={v}\n", "DB_PASSWORD=«redacted"),
    ('{{"password": "{v}"}}', '"password": "«redacted'),
    ("postgres://user:{v}@host/db", "postgres://user:«redacted generic-credential-uri»@host/db"),
    ('API_KEY = "{v}"\n', 'API_KEY = "«redacted'),
    ('"source": ["password = \\"{v}\\"\\n"]', '"source": ["password = \\"«redacted'),
    ("Authorization: Bearer {v}\n", "Authorization: Bearer «redacted http-credential»"),
    ('password := "{v}"\n', 'password := "«redacted'),
])
def test_assignments_are_redacted_and_their_names_kept(template, kept):
    value = "hunter2" + "Qz8Lm4Rb"
    text, count = redact(template.format(v=value))
    assert count == 1 and value not in text and kept in text


# Values that are secrets only by where they stand; every other one is a token found anywhere.
_IN_CONTEXT = {"BEARER": "Authorization: Bearer {v}", "NB_BEARER": "Authorization: Bearer {v}",
               "DOCKER_AUTH": '"auth": "{v}"', "AWS_SECRET": "aws_secret_access_key = {v}",
               "URL_PASSWORD": "postgres://app:{v}@db/orders"}


@pytest.mark.parametrize("name", [n for n in fake_secrets() if n not in ("KEY_BODY", "PEM_BODY")])
def test_every_form_is_found(name):
    value = fake_secrets()[name]
    if name in _IN_CONTEXT:
        text = _IN_CONTEXT[name].format(v=value)
    elif "PASSWORD" in name or name.endswith("API_KEY"):
        text = f"password: {value}"
    else:
        text = f"see {value} here"
    cleaned, count = redact(text)
    assert count >= 1 and value not in cleaned, text


def test_jwt_and_private_key_blocks_are_redacted_whole():
    values = fake_secrets()
    text, _ = redact(f"token: {values['JWT']}\n{_block('EC', values['KEY_BODY'])}\nafter")
    assert values["JWT"].split(".")[2] not in text and values["KEY_BODY"] not in text
    assert text.endswith("\nafter") and "«redacted private-key»" in text


@pytest.mark.parametrize("text", [
    "aws_access_key_id = AKIAIOSFODNN7EXAMPLE\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "password: changeme", "password: <password>", "password: ${DB_PASSWORD}", "password: xxx", "password: xxxxxxxx",
    'password = "{{ vault_password }}"', "DB_PASSWORD=$DB_PASSWORD", "password: %(db_password)s",
    "password = get_password()", "password = os.environ['DB_PASSWORD']", "password: str = None",
    "def login(password: str) -> None:", "password = self.password", "password: required",
    'PASSWORD_FIELD = "password"', 'password_file = "/run/secrets/db"', "secret_key: <your-secret-key>",
    "Authorization: Bearer <token>", "a bearer token is sent with every request", "postgres://user:${PASS}@host/db",
    "password: «redacted secret»", "[bold]password[/]: [red]x[/]",
])
def test_documented_examples_and_placeholders_are_allowed(text):
    assert find_secrets(text) == [], text


def test_hostile_text_is_scanned_without_loss():
    value = fake_secrets()["GITHUB"]
    big = ("x" * 999_000) + f" {value} " + ("[bold]" * 100) + "\udcff"
    text, count = redact(big)
    assert count == 1 and value not in text and text.startswith("x" * 999_000) and text.endswith("[bold]\udcff")
    assert find_secrets("İ" * 10 + " password: hunter2Zq8") != []  # lowercasing changes the length here


def test_secret_paths_are_skipped_by_name_or_content_and_code_about_secrets_is_not():
    assert is_secret_path(".env") and is_secret_path("deploy/id_ed25519") and is_secret_path("config/secrets.yaml")
    assert is_secret_path("dumps/" + fake_secrets()["GITHUB"] + ".txt")
    assert not is_secret_path("core/secrets/secrets.py") and not is_secret_path(".env.example")


# --- memory and agent fields ---------------------------------------------------------------------------------


def test_free_text_fields_refuse_and_structural_fields_redact(repo):
    values = fake_secrets()
    engine = Engine(repo)
    for draft, field in [(MemoryDraft("ok", title=values["TITLE_GITHUB"]), "title"),
                         (MemoryDraft("ok", tags=("deploy", values["TAG_GITLAB"])), "tags"),
                         (MemoryDraft("ok", source_key=values["KEY_STRIPE"]), "key"),
                         (MemoryDraft("ok", context="password: " + values["STEP_PASSWORD"]), "context"),
                         (MemoryDraft(values["GITHUB"]), "text")]:
        with pytest.raises(CortexError, match=f"memory's {field} looks like it contains a secret"):
            engine.remember(draft)
    made = engine.remember(MemoryDraft("Deploy notes", files=(f"config/{values['FILES_GITHUB']}.yaml",),
                                       symbols=(f"connect_{values['SYMBOL_GITLAB']}",))).memory
    assert made.files == ["config/«redacted github-pat».yaml"] and made.symbols == ["connect_«redacted gitlab-pat»"]
    assert [m.text for m in engine.list_memories()] == ["Deploy notes"]


def test_a_refused_memory_is_neither_embedded_nor_cached(repo):
    """The refusal comes before the near-duplicate check (the CLI's and the dashboard's remember): that check
    embedded the draft first and kept its vector, the embedding of a secret, in the repository's cache."""
    values = fake_secrets()
    engine = Engine(repo)
    engine.remember(MemoryDraft("Deploy notes live in the wiki"))
    cache = engine.store().vector_cache.table
    cached = cache.count_rows()
    for draft in (MemoryDraft(values["GITHUB"]), MemoryDraft("Deploy notes", title=values["TITLE_GITHUB"])):
        with pytest.raises(CortexError, match="looks like it contains a secret"):
            engine.remember(draft, check_near=True)
    assert cache.count_rows() == cached


def test_a_secret_split_by_an_unseen_character_is_refused(repo):
    """A backspace or a zero-width space inside a key hides it from the scan, while a terminal or a reader sees
    the key whole (rich drops the backspace when printing)."""
    values = fake_secrets()
    engine = Engine(repo)
    for cut in ("\b", "\u200b", "\x1b"):
        for draft, field in [(MemoryDraft(values["GITHUB"][:4] + cut + values["GITHUB"][4:]), "text"),
                             (MemoryDraft("ok", title=values["TITLE_GITHUB"][:6] + cut + values["TITLE_GITHUB"][6:]),
                              "title")]:
            with pytest.raises(CortexError, match=f"memory's {field} looks like it contains a secret"):
                engine.remember(draft)
    assert engine.remember(MemoryDraft("a tab\tand a newline\nare ordinary")).outcome == "created"


def test_agent_fields_refuse_secrets_and_nothing_is_stored(repo):
    values = fake_secrets()
    log = Engine(repo).agent_log(create=True)
    with pytest.raises(CortexError, match="the goal looks like it contains a secret"):
        log.init(f"ship it with {values['GOAL_OPENAI']}")
    assert not log.is_initialised()
    log.init("Ship the orders service")
    with pytest.raises(CortexError, match="the purpose looks like"):
        log.branch("try-cache", f"uses {values['PURPOSE_HF']}")
    with pytest.raises(CortexError, match="the observation looks like"):
        log.log_ota(f"password: {values['STEP_PASSWORD']}", "", "")
    log.log_ota("tests pass", "cache works", "commit")
    with pytest.raises(CortexError, match="the roadmap looks like"):
        log.commit("cache added", update_roadmap=f"rotate {values['ROADMAP_GITHUB']}")
    ctx = log.context()
    assert [e.text for e in ctx.roadmap] == ["Ship the orders service"] and len(ctx.steps) == 1 and not ctx.commits
    assert [b.name for b in ctx.branches] == ["main"]


# --- the seeded corpus, end to end ---------------------------------------------------------------------------


def _table_dump(uri: str) -> str:
    db = lancedb.connect(uri)
    return "\n".join(repr(db.open_table(name).to_arrow().to_pylist()) for name in db.list_tables().tables)


def _disk_dump(directory: Path) -> str:
    return "\n".join(p.read_bytes().decode("utf-8", "replace") for p in directory.rglob("*") if p.is_file())


async def test_seeded_corpus_nothing_stored_searchable_copied_or_shown(empty_repo, capsys, tmp_path, monkeypatch):
    values = fake_secrets()
    repo = empty_repo
    build_corpus(repo, values)
    cli = Cli(repo)
    shown: list[str] = []

    shown.append(json.dumps(cli.json("index")))
    report = cli.json("index", "--skipped")
    reasons = {s["path"]: s["reason"] for s in report}
    assert reasons == {".env": "secret file", "keys/deploy.pem": "secret file"}
    indexed = {r["path"] for r in scan(Engine(repo).code_index().files, columns=["path"])}
    assert {"src/settings.py", "config/app.yaml", "config/docker-config.json", "deploy/run.sh", "deploy/users.conf",
            "docs/setup.md", "notebooks/explore.ipynb", "pkg/deep/nested/module/client.py"} <= indexed
    assert "local/dump.txt" not in indexed

    # Memory fields: free text refused with one line naming the field, paths and symbols redacted.
    for option, value in (("--title", values["TITLE_GITHUB"]), ("--tags", values["TAG_GITLAB"]),
                          ("--key", values["KEY_STRIPE"])):
        code, out, err = cli("remember", "Deploy notes", option, f"about {value}")
        assert code == 1 and err.count("\n") == 1 and option[2:].rstrip("s") in err and "secret" in err
        shown += [out, err]
    made = cli.json("remember", "Deploy notes", "--files", f"config/{values['FILES_GITHUB']}.yaml",
                    "--symbols", f"connect_{values['SYMBOL_GITLAB']}")["memory"]
    assert "«redacted github-pat»" in made["files"][0]
    records = tmp_path / "import.jsonl"
    records.write_text(json.dumps({"text": "Rotate keys monthly", "title": f"rotate {values['IMPORT_TITLE_GITHUB']}"})
                       + "\n" + json.dumps({"text": "Cache prices", "files": [f"src/{values['IMPORT_FILE_GITLAB']}.py"]})
                       + "\n")
    code, _, err = cli("import", str(records))
    assert code == 1 and "title contains a secret (github-pat)" in err and "nothing was imported" in err
    shown.append(err)
    imported = cli.json("import", str(records), "--skip-bad")
    assert imported["created"] == 1 and [b["where"].rsplit(" ", 1)[-1] for b in imported["bad"]] == ["1"]

    # Agent fields.
    for args in (("agent", "init", f"ship with {values['GOAL_OPENAI']}"),):
        code, out, err = cli(*args)
        assert code == 1 and "goal looks like it contains a secret" in err
    cli.json("agent", "init", "Ship the orders service")
    for args in (("agent", "branch", "cache", f"uses {values['PURPOSE_HF']}"),
                 ("agent", "log", "--obs", f"password: {values['STEP_PASSWORD']}")):
        code, out, err = cli(*args)
        assert code == 1 and "looks like it contains a secret" in err
        shown += [out, err]
    cli.json("agent", "log", "--obs", "the settings module holds the database URL", "--action", "read it")
    code, out, err = cli("agent", "commit", "found the settings", "--roadmap", f"rotate {values['ROADMAP_GITHUB']}")
    assert code == 1 and "roadmap" in err

    # 0 searchable: every value as a query, and ordinary queries that reach the files holding them.
    queries = [v for v in values.values() if v] + ["settings password token", "database password staging",
                                                    "authorization bearer headers", "docker auths registry"]
    for query in queries:
        hits = cli.json("search", query, "--limit", "20")["hits"]
        shown.append(json.dumps(hits))
    assert any("settings.py" in json.dumps(h) for h in cli.json("search", "settings password token")["hits"])

    # 0 copied: the context document in every format, written and printed.
    task = "change the database password, the API tokens and the deploy key in settings, config, docs and notebooks"
    for fmt in ("markdown", "xml", "json"):
        shown.append(json.dumps(cli.json("context", task, "--format", fmt, "--budget", "50000")))
    copied = cli.json("context", task, "--budget", "50000")["text"]
    assert "src/settings.py" in copied and "«redacted" in copied

    # 0 shown: every command that prints stored or repository text.
    for args in (("what",), ("git",), ("list", "--status", "all"), ("stats",), ("index", "--status"),
                 ("agent", "context"), ("agent", "branches"), ("select", task)):
        shown.append(json.dumps(cli.json(*args)))
    for args in (("what",), ("git",), ("list",), ("show", made["id"]), ("export",), ("agent", "context"),
                 ("select", task), ("search", "settings password token")):
        shown.append("".join(cli(*args)[1:]))
    assert any("Rotate the deploy token" in s for s in shown)
    cli.json("agent", "export", str(tmp_path / "agent-export"))
    shown.append(_disk_dump(tmp_path / "agent-export"))

    # 0 shown over MCP: search, select_context, what, and a refused remember.
    async with server(repo, "--no-watch") as client:
        for query in ("settings password token", values["GITHUB"], values["YAML_PASSWORD"]):
            shown.append(json.dumps((await call(client, "smart_search", query=query))["hits"]))
        shown.append(json.dumps(await call(client, "select_context", task=task, budget=50000)))
        shown.append(json.dumps(await call(client, "what_should_i_know")))
        for arguments in ({"title": values["MCP_TITLE_GITHUB"]}, {"tags": [values["MCP_TAG_GITLAB"]]}):
            result = await client.call_tool("remember", {"text": "ok", **arguments})
            assert result.is_error and "looks like it contains a secret" in result.content[0].text
            shown.append(result.content[0].text)

    assert leaks("\n".join(shown), values) == []
    # 0 stored: every row of every table, and every byte under .cortex/ (data files, indexes, old versions).
    engine = Engine(repo)
    assert leaks(_table_dump(engine.db_uri), values) == []
    assert leaks(_disk_dump(repo / ".cortex"), values) == []


def test_clean_corpus_stays_indexed_without_redactions(empty_repo):
    """This repository's own source, which talks about secrets everywhere, is ordinary code: nothing is skipped
    for secrets and nothing is redacted."""
    repo = empty_repo
    for part in ("core", "app", "widgets", "themes", "README.md", "pyproject.toml"):
        source = ROOT / part
        if source.is_dir():
            shutil.copytree(source, repo / part, ignore=shutil.ignore_patterns("__pycache__", "model_files", "*.pyc"))
        else:
            shutil.copy(source, repo / part)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "Copy the source")
    index = Engine(repo).code_index(create=True)
    report = index.update(embed=False)
    assert report.changed > 50
    assert not [s for s in report.skipped if "secret" in s[1]]
    # What the index would have redacted in each file it stored (the marker itself appears in this code's docs).
    found = {path: find_secrets((repo / path).read_text(encoding="utf-8")) for path in
             (r["path"] for r in scan(Engine(repo).code_index().files, columns=["path"]))}
    assert {path: hits for path, hits in found.items() if hits} == {}


def test_git_subjects_are_redacted_where_read(repo):
    token = fake_secrets()["COMMIT_GITHUB"]
    commit_file(repo, "x.txt", "x\n", f"Rotate {token}")
    assert Engine(repo).git().commits[0].subject == "Rotate «redacted github-pat»"
