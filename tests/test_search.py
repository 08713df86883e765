"""Smart search on real stores, a real model and real git state."""

from datetime import UTC, datetime, timedelta

import pytest
from cortex_tui.core.engine import Engine
from cortex_tui.core.errors import CortexError
from cortex_tui.core.records import MemoryDraft
from cortex_tui.core.search.query import Filters, parse_query

from .conftest import git

DISTRACTORS = [
    "The release checklist lives in the wiki and is reviewed every sprint.",
    "Use black formatting with a line length of 100 characters.",
    "Retry network calls three times with jitter before giving up.",
    "The onboarding guide explains how to set up the local environment.",
]


@pytest.fixture
def engine(repo):
    e = Engine(repo)
    e.remember_many([MemoryDraft(text=t) for t in DISTRACTORS])
    return e


def ids(results):
    return [h.id for h in results.hits]


def test_query_processing_splits_identifiers_and_drops_stop_words():
    q = parse_query("how does getUserById call parse_config in http.client")
    assert {"getuserbyid", "get", "user", "id", "parse_config", "parse", "config", "http", "client"} <= set(q.terms)
    assert "how" not in q.terms and "does" not in q.terms and "in" not in q.terms
    assert "getUserById" in q.identifiers


def test_hybrid_finds_by_meaning_what_full_text_misses(engine):
    target = engine.remember(MemoryDraft(text="LanceDB was picked as our embedded vector database.", kind="decision")).memory
    searcher = engine.searcher()
    query = "which storage engine did we choose"
    assert target.id not in ids(searcher.search(query, signals=("text",)))
    assert ids(searcher.search(query))[0] == target.id


def test_hybrid_finds_an_identifier_that_vector_search_misses(engine):
    target = engine.remember(MemoryDraft(text="Cold starts call buildFtsIdx first and then warm the cache.")).memory
    searcher = engine.searcher()
    vector_only = ids(searcher.search("fts", signals=("vector",)))
    assert target.id not in vector_only[:1]
    assert ids(searcher.search("fts"))[0] == target.id


def test_memory_about_a_modified_file_outranks_an_equal_one(engine, repo):
    # b is written about the file as it is being changed: its anchor is that text, so it is not "code changed since"
    # (which would rank it lower; see test_anchors.py), and the working change's boost is what tells them apart.
    a = engine.remember(MemoryDraft(text="Cache invalidation happens on write (module one).", files=("README.md",))).memory
    (repo / "src/app.py").write_text("def main():\n    return 2\n")
    b = engine.remember(MemoryDraft(text="Cache invalidation happens on write (module two).", files=("src/app.py",))).memory
    results = engine.search("cache invalidation on write", Filters(memories_only=True))
    assert ids(results)[:2] == [b.id, a.id]
    assert "modified_file" in results.hits[0].score.boosts and "modified_file" not in results.hits[1].score.boosts


def test_memory_on_the_current_branch_outranks_one_from_another(engine, repo):
    git(repo, "checkout", "-q", "-b", "feature/login")
    here = engine.remember(MemoryDraft(text="Session tokens expire after one hour (login flow).")).memory
    git(repo, "checkout", "-q", "main")
    there = engine.remember(MemoryDraft(text="Session tokens expire after one hour (admin flow).")).memory
    assert ids(engine.search("session token expiry", Filters(memories_only=True)))[0] == there.id
    git(repo, "checkout", "-q", "feature/login")
    results = engine.search("session token expiry", Filters(memories_only=True))
    assert ids(results)[0] == here.id and "branch" in results.hits[0].score.boosts


def test_time_decay_orders_otherwise_equal_memories(engine):
    now = datetime.now(UTC)
    old, new = engine.remember_many([
        MemoryDraft(text="Deploys go out on Tuesdays (team red).", created_at=now - timedelta(days=30)),
        MemoryDraft(text="Deploys go out on Tuesdays (team blue).", created_at=now - timedelta(hours=3)),
    ])
    results = engine.search("when do deploys go out", Filters(memories_only=True))
    order = ids(results)
    assert order.index(new.memory.id) < order.index(old.memory.id)
    assert results.hits[order.index(new.memory.id)].score.boosts.get("recency") == engine.settings.search.recency_day


def test_superseded_versions_are_hidden_unless_history(engine):
    engine.remember(MemoryDraft(text="The API rate limit is 100 requests per minute.", source_key="rate"))
    new = engine.remember(MemoryDraft(text="The API rate limit is 500 requests per minute.", source_key="rate")).memory
    found = engine.search("API rate limit requests per minute", Filters(memories_only=True))
    keyed = [h for h in found.hits if h.memory.source_key == "rate"]
    assert [h.id for h in keyed] == [new.id]
    with_history = engine.search("API rate limit requests per minute", Filters(memories_only=True, history=True))
    assert len([h for h in with_history.hits if h.memory.source_key == "rate"]) == 2


def test_code_and_memories_are_searched_together_with_breakdowns(engine, repo):
    (repo / "src/billing.py").write_text("def computeInvoiceTotal(lines):\n    return sum(l.amount for l in lines)\n")
    engine.code_index(create=True).update(embed=True)
    note = engine.remember(MemoryDraft(text="Invoice totals must include tax.", files=("src/billing.py",))).memory
    results = engine.search("invoice total")
    sources = {h.source for h in results.hits[:3]}
    assert sources == {"code", "memory"}
    code = next(h for h in results.hits if h.source == "code")
    assert code.path == "src/billing.py" and code.text.startswith("def computeInvoiceTotal")
    assert set(code.score.ranks) <= {"vector", "text", "context"} and code.score.total > 0
    assert results.index_fresh is True and results.embeddings_pending == 0
    assert note.id in ids(results)
    assert engine.search("invoice total", Filters(code_only=True)).hits[0].source == "code"
    (repo / "src/billing.py").write_text("def computeInvoiceTotal(lines):\n    return 0\n")
    assert engine.search("invoice total").index_fresh is False


def test_implicit_query_from_git_context(engine, repo):
    git(repo, "checkout", "-q", "-b", "fix/retry-jitter")
    results = engine.search("")
    assert results.implicit and {"retry", "jitter"} <= set(results.terms)
    assert results.hits[0].memory.text == DISTRACTORS[2]


def test_a_search_with_no_query_on_a_clean_tree_puts_code_before_the_changelog(repo):
    """Commit subjects are the words, and the changelog repeats every one of them: it counts only when the
    subjects are about a release, as selection counts it for a task."""
    from .conftest import commit_file

    notes = ""
    for subject, code in [("Retry uploads with jitter", "def upload_retry(jitter):\n    return jitter\n"),
                          ("Cache upload sessions", "def upload_session_cache():\n    return {}\n")]:
        notes += f"- {subject}\n"
        (repo / "CHANGES.md").write_text(f"# Changes\n\n{notes}")
        git(repo, "add", "CHANGES.md")
        commit_file(repo, f"src/{subject.split()[0].lower()}.py", code, subject)
    engine = Engine(repo)
    engine.code_index(create=True).update(embed=False)
    paths = [h.path for h in engine.search("").hits if h.source == "code"]
    # The changelog's role (-1.00) takes its score to 0: a hit that says nothing is not listed at all.
    assert paths and paths[0].startswith("src/") and "CHANGES.md" not in paths
    git(repo, "commit", "-q", "--allow-empty", "-m", "Release 2.0 with the changelog")
    assert "role" not in next(h for h in engine.search("").hits if h.path == "CHANGES.md").score.boosts


@pytest.mark.parametrize("query", ["", "?!.,;", "x" * 10_000, "'; DROP TABLE memories; --", "a the of"])
def test_odd_queries_never_raise(engine, query):
    results = engine.search(query)
    assert isinstance(results.hits, list)


def test_unknown_kind_filter_and_nothing_indexed(tmp_path):
    with pytest.raises(CortexError, match="unknown kind"):
        Filters(kinds=("opinion",))
    with pytest.raises(CortexError, match="nothing indexed or remembered yet"):
        Engine(tmp_path).search("anything")


def test_results_are_verbatim(engine):
    text = "  Keep   spacing\n\tand tabs exactly.  "
    m = engine.remember(MemoryDraft(text=text)).memory
    hit = next(h for h in engine.search("spacing tabs exactly").hits if h.id == m.id)
    assert hit.text == text


def test_the_implicit_task_reads_as_its_parts_with_no_subject_twice(repo):
    """A squash-merged pull request's subject is its commit's with ` (#3168)` added: the implicit task (the context
    pane shows it) named both, run together with the branch words and file names into one line."""
    from cortex_tui.core.git.gitctx import implicit_query, read_git_context

    from .conftest import commit_file

    git(repo, "checkout", "-q", "-b", "fix/plain-int")
    commit_file(repo, "src/parse.py", "X = 1\n", "parse plain int in a few more inputs")
    commit_file(repo, "src/parse.py", "X = 2\n", "Parse plain int in a few more inputs (#3168)")
    (repo / "src" / "parse.py").write_text("X = 3\n")
    text = implicit_query(read_git_context(repo))
    assert text.lower().count("parse plain int") == 1, text
    assert text.startswith("fix plain int; ") and text.endswith("; src/parse.py"), text


def test_a_key_filter_keeps_memories_stored_under_those_keys(cli, repo):
    """`--key KEY` (and `key:KEY` inline, MCP's `keys`) keeps the memories stored under a key; `KEY*` every key a
    prefix begins, its `_` and `%` read as text."""
    for key, text in (("deploy/prod", "deploys to production need two approvals"),
                      ("deploy/staging", "deploys to staging go out on every merge"),
                      ("deploy_notes", "deploys are announced in the channel"),
                      ("docs/intro", "the docs say how deploys work")):
        cli.json("remember", text, "--key", key, "--kind", "note")

    def keys(*args: str) -> set[str]:
        return {h["memory"]["source_key"] for h in cli.json("search", *args)["hits"] if h.get("memory")}

    assert keys("deploys", "--key", "deploy/*") == {"deploy/prod", "deploy/staging"}
    assert keys("deploys", "--key", "docs/intro", "--key", "deploy_notes") == {"docs/intro", "deploy_notes"}
    assert keys("deploys key:deploy_*") == {"deploy_notes"}
    assert keys("deploys", "--key", "nothing/*") == set()
    assert len(keys("deploys")) == 4
