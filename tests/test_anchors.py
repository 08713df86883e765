"""Memories anchored to code: flagged "code changed since" when the code they describe changes, through the resident
server as users run `cortex` (a real git repository per test: working-tree edits, commits, renames, deletions,
branch switches, confirmation)."""

from __future__ import annotations

import json

from .conftest import commit_file, git

RETRY = '''import time


def backoff(attempt):
    """Exponential backoff capped at 30 s."""
    return min(2 ** attempt, 30)


def jitter(value):
    return value + 0.1


def attempts(limit):
    """Every attempt number up to the limit, the first one included."""
    return list(range(1, limit + 1))


def give_up(attempt, limit):
    """Whether the caller should stop retrying after this attempt."""
    return attempt >= limit
'''


def _remember(cli, text: str, *flags: str) -> str:
    return cli.json("remember", text, "--kind", "decision", *flags)["memory"]["id"]


def _change(cli, memory_id: str) -> dict | None:
    return cli.json("show", memory_id)["code_change"]


def _anchored(cli, repo) -> str:
    commit_file(repo, "src/retry.py", RETRY, "Add retry helpers")
    return _remember(cli, "retries use exponential backoff capped at 30 s", "--files", "src/retry.py",
                     "--symbols", "backoff")


def test_a_working_tree_edit_of_the_definition_flags_the_memory_everywhere(cli, repo, tmp_path):
    memory_id = _anchored(cli, repo)
    assert _change(cli, memory_id) is None
    # An edit elsewhere in the same file leaves the definition (and the memory) as it was.
    (repo / "src/retry.py").write_text(RETRY.replace("0.1", "0.2"), encoding="utf-8")
    assert _change(cli, memory_id) is None
    (repo / "src/retry.py").write_text(RETRY.replace("30)", "60)"), encoding="utf-8")
    change = _change(cli, memory_id)
    assert change["state"] == "changed" and change["symbol"] == "backoff" and change["commit"] == ""
    assert (change["added"], change["removed"]) == (1, 1)
    assert "working tree" in change["summary"]
    code, out, _ = cli("show", memory_id)
    assert code == 0 and "code changed since: backoff in src/retry.py changed" in out
    what = cli.json("what")
    assert [m["code_change"]["symbol"] for m in what["file_memories"]] == ["backoff"]
    code, out, _ = cli("what")
    assert "code changed since: backoff in src/retry.py" in out
    hits = cli.json("search", "exponential backoff capped")["hits"]
    assert hits[0]["memory"]["code_change"]["symbol"] == "backoff"
    # An edit in the working tree is the work going on: flagged, its score kept (see the retry example below).
    assert hits[0]["breakdown"]["boosts"]["code changed, in progress"] == 0.0
    graph = cli.json("graph", "file:src/retry.py")
    assert any(memory_id in n["node"] and "code changed since" in n["label"] for n in graph["neighbours"])
    out = tmp_path / "context.md"
    assert cli("context", "change the exponential backoff cap of retries", "--output", str(out))[0] == 0
    assert "code changed since this was written: backoff in src/retry.py" in out.read_text(encoding="utf-8")


def test_a_later_commit_names_the_commit_and_the_changed_memory_ranks_lower(cli, repo):
    memory_id = _anchored(cli, repo)
    other = _remember(cli, "retries use exponential backoff, capped at 30 seconds", "--new")
    hits = [h["id"] for h in cli.json("search", "retries use exponential backoff capped at 30 s")["hits"]]
    assert hits.index(memory_id) < hits.index(other)
    sha = commit_file(repo, "src/retry.py", RETRY.replace("    return min(2 ** attempt, 30)\n",
                                                          "    delay = 2 ** attempt\n    return min(delay, 60)\n"),
                      "Raise the backoff cap")
    change = _change(cli, memory_id)
    assert change["commit"] == sha[:7] and (change["added"], change["removed"]) == (2, 1)
    assert f"changed in commit {sha[:7]}" in change["summary"]
    hits = [h["id"] for h in cli.json("search", "retries use exponential backoff capped at 30 s")["hits"]]
    assert hits.index(other) < hits.index(memory_id)


def test_renames_are_followed_and_a_renamed_or_deleted_symbol_says_so(cli, repo):
    memory_id = _anchored(cli, repo)
    git(repo, "mv", "src/retry.py", "src/backoff.py")
    git(repo, "commit", "-q", "-m", "Move retry helpers")
    assert _change(cli, memory_id) is None  # the file moved, the definition is the same: still true
    commit_file(repo, "src/backoff.py", RETRY.replace("def backoff(", "def delay_for("), "Rename backoff")
    change = _change(cli, memory_id)
    assert change["state"] == "renamed" and "renamed to delay_for" in change["summary"]
    assert "src/retry.py (renamed to src/backoff.py)" in change["summary"]
    without = RETRY.replace('def backoff(attempt):\n    """Exponential backoff capped at 30 s."""\n    return min(2 ** attempt, 30)\n', "")
    commit_file(repo, "src/backoff.py", without + "\n\ndef spread(values):\n    return [jitter(v) for v in values]\n", "Drop backoff")
    change = _change(cli, memory_id)
    assert change["state"] == "deleted" and "backoff" in change["summary"]


def test_a_deleted_file_is_reported_deleted(cli, repo):
    memory_id = _anchored(cli, repo)
    git(repo, "rm", "-q", "src/retry.py")
    sha = git(repo, "commit", "-q", "-m", "Remove retries") or git(repo, "rev-parse", "HEAD").strip()
    change = _change(cli, memory_id)
    assert change["state"] == "deleted" and change["summary"] == f"src/retry.py was deleted in commit {sha[:7]}"


def test_a_branch_switch_flags_and_switching_back_clears(cli, repo):
    memory_id = _anchored(cli, repo)
    git(repo, "checkout", "-q", "-b", "faster")
    commit_file(repo, "src/retry.py", RETRY.replace("2 ** attempt", "3 ** attempt"), "Faster backoff")
    git(repo, "checkout", "-q", "main")
    assert _change(cli, memory_id) is None
    git(repo, "checkout", "-q", "faster")
    assert _change(cli, memory_id)["symbol"] == "backoff"
    git(repo, "checkout", "-q", "main")
    assert _change(cli, memory_id) is None


def test_confirm_clears_the_flag_until_the_code_changes_again(cli, repo):
    memory_id = _anchored(cli, repo)
    commit_file(repo, "src/retry.py", RETRY.replace("30)", "60)"), "Raise the cap")
    assert _change(cli, memory_id) is not None
    code, out, _ = cli("confirm", memory_id)
    assert code == 0 and "confirmed" in out
    assert _change(cli, memory_id) is None
    assert cli.json("show", memory_id)["anchors"]["commit"] == git(repo, "rev-parse", "HEAD").strip()
    commit_file(repo, "src/retry.py", RETRY.replace("30)", "90)"), "Raise it again")
    assert _change(cli, memory_id)["symbol"] == "backoff"
    # A new version is written against the code as it is: not flagged.
    again = cli.json("remember", "retries back off exponentially, capped at 90 s", "--files", "src/retry.py",
                     "--symbols", "backoff")["memory"]
    assert again["code_change"] is None and again["anchors"]["files"][0]["symbols"][0][0] == "backoff"
    code, _, err = cli("confirm", _remember(cli, "a memory about nothing in particular"))
    assert code == 1 and "not anchored" in err


def test_symbols_without_files_are_anchored_through_the_index(cli, repo):
    commit_file(repo, "src/retry.py", RETRY, "Add retry helpers")
    assert cli("index")[0] == 0
    memory_id = _remember(cli, "jitter adds a tenth", "--symbols", "jitter")
    anchors = cli.json("show", memory_id)["anchors"]
    assert [f["path"] for f in anchors["files"]] == ["src/retry.py"]
    (repo / "src/retry.py").write_text(RETRY.replace("0.1", "0.5"), encoding="utf-8")
    assert _change(cli, memory_id)["symbol"] == "jitter"


def test_memories_without_anchors_and_plain_json_stay_as_they_were(cli, repo):
    memory_id = _remember(cli, "we deploy on Fridays")
    shown = cli.json("show", memory_id)
    assert shown["anchors"] is None and shown["code_change"] is None
    json.dumps(shown)


def test_anchors_survive_export_and_import(cli, repo, tmp_path):
    memory_id = _anchored(cli, repo)
    anchors = cli.json("show", memory_id)["anchors"]
    out = tmp_path / "memories.jsonl"
    assert cli("export", "-o", str(out))[0] == 0
    assert cli("forget", memory_id, "--purge")[0] == 0
    assert cli("import", str(out))[0] == 0
    assert cli.json("show", memory_id)["anchors"] == anchors
    (repo / "src/retry.py").write_text(RETRY.replace("30)", "60)"), encoding="utf-8")
    assert _change(cli, memory_id)["symbol"] == "backoff"


def test_a_paraphrase_is_offered_as_a_new_version_and_kept_only_with_new(cli, repo):
    first = _remember(cli, "Use tabs for indentation in Go files")
    code, out, _ = cli("remember", "Go files are indented with tabs")
    # Not stored: exit 1, so a script knows; the match is in the answer.
    assert code == 1 and f"an active memory says the same: {first}" in out and "--new keeps both" in out
    code, out, _ = cli("remember", "Go files are indented with tabs", "--json")
    answer = json.loads(out)
    assert code == 1 and answer["near_duplicate"] is True and answer["match"]["id"] == first and answer["memory"] is None
    assert [m["id"] for m in cli.json("list")] == [first]
    # Different numbers or a negation are different claims, not paraphrases.
    assert cli.json("remember", "Use tabs for indentation in Go files, never spaces")["outcome"] == "created"
    version = cli.json("remember", "Go files are indented with tabs", "--version-of", first)["memory"]
    assert version["version"] == 2
    code, out, _ = cli("remember", "Go files are indented with tabs only", "--json")
    assert code == 1 and json.loads(out)["near_duplicate"] is True
    kept = cli.json("remember", "Go files are indented with tabs only", "--new")
    assert kept["outcome"] == "created" and kept["memory"]["id"] != version["id"]


def test_the_context_never_carries_two_memories_that_say_the_same_thing(cli, repo, tmp_path):
    # An import stores what it is given (it asks no questions): two memories that say the same thing.
    lines = [{"text": "the retry loop gives up after five attempts and logs the last error", "kind": "fact"},
             {"text": "The retry loop gives up after five attempts, and logs the last error.", "kind": "fact"}]
    (tmp_path / "two.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    assert cli("import", str(tmp_path / "two.jsonl"))[0] == 0
    assert len(cli.json("list")) == 2
    chosen = cli.json("select", "why does the retry loop give up after five attempts")
    ids = [i["id"] for i in chosen["chosen"] if i["kind"] == "memory"]
    assert len(ids) == 1, ids


def test_reads_record_access_and_retention_drops_only_what_the_policy_says(cli, repo, monkeypatch):
    monkeypatch.setenv("CORTEX_SESSION", "s1")
    notes = [_remember(cli, f"scratch note number {n}: look at module {chr(97 + n)}", "--scope", "session")
             for n in range(4)]
    pinned = _remember(cli, "keep this scratch note about the parser", "--scope", "session", "--tags", "pinned")
    kept = _remember(cli, "the repository memory stays whatever its age")
    first = {m["id"]: m["accessed_at"] for m in cli.json("list", "--scope", "session")}
    cli.json("show", notes[0])
    cli.json("show", notes[1])
    assert cli.json("gc", "--dry-run")["would_drop"] == []  # within the session cap (24 per kind)
    # The gc wrote the access times the reads recorded before it looked.
    after = {m["id"]: m["accessed_at"] for m in cli.json("list", "--scope", "session")}
    assert after[notes[0]] > first[notes[0]] and after[notes[1]] > first[notes[1]]
    assert after[notes[2]] == first[notes[2]] and after[notes[3]] == first[notes[3]]
    # A cap of 2 session memories per kind, in a process of its own that reads it: the two least recently read go.
    monkeypatch.setenv("CORTEX_RETENTION__SESSION", "2")
    plan = [m["id"] for m in cli.json("gc", "--dry-run", "--no-daemon")["would_drop"]]
    assert set(plan) == {notes[2], notes[3]} and pinned not in plan and kept not in plan
    assert {m["id"] for m in cli.json("list", "--scope", "session", "--no-daemon")} == {*notes, pinned}
    dropped = [m["id"] for m in cli.json("gc", "--no-daemon")["dropped"]]
    assert set(dropped) == set(plan)
    assert {m["id"] for m in cli.json("list", "--scope", "session", "--no-daemon")} == {notes[0], notes[1], pinned}
    history = {m["id"]: m["status"] for m in cli.json("list", "--status", "deleted", "--no-daemon")}
    assert history == {n: "deleted" for n in plan}
    assert kept in {m["id"] for m in cli.json("list", "--no-daemon")}


GO_CHAIN = """package gin

type Context struct {
\tindex int
}

func (c *Context) Next() {
\tc.index++
}

type Iterator struct {
\tat int
}

func (it *Iterator) Next() bool {
\tit.at++
\treturn it.at < 10
}
"""


def test_an_anchor_named_as_an_earlier_index_named_it_follows_its_definition(cli, repo):
    """Go methods were named bare (`Next`) before they were named with their receiver (`Context.Next`): a memory
    anchored then is checked against the definition at its anchored line, not flagged deleted by the new name."""
    from dataclasses import replace

    from cortex_tui.core.engine import Engine

    commit_file(repo, "chain.go", GO_CHAIN, "Add the handler chain")
    memory_id = _remember(cli, "handlers run in order through Next", "--files", "chain.go", "--symbols", "Context.Next")
    store = Engine(repo).store()
    anchors = store.get(memory_id).anchors
    assert anchors is not None and [s.name for s in anchors.files[0].symbols] == ["Context.Next"]
    bare = replace(anchors, files=(replace(anchors.files[0], symbols=tuple(
        replace(s, name="Next") for s in anchors.files[0].symbols)),))
    store.set_anchors(memory_id, bare)
    commit_file(repo, "chain.go", GO_CHAIN + "\nfunc helper() {}\n", "Add a helper")
    assert _change(cli, memory_id) is None  # an edit elsewhere: the anchored method is as it was
    commit_file(repo, "chain.go", GO_CHAIN.replace("\tc.index++\n", "\tc.index += 2\n") + "\nfunc helper() {}\n",
                "Skip a handler")
    change = _change(cli, memory_id)
    assert change is not None and change["state"] == "changed", change


def _two_retry_decisions(cli, repo) -> tuple[str, str]:
    commit_file(repo, "src/config.py", "RETRY_DELAY_SECONDS = 5\nMAX_RETRIES = 3\n", "Add the config")
    commit_file(repo, "web/users.js", "export const retryDelayMs = 2000;\n", "Add the users page")
    config = _remember(cli, "between retries of a failed upstream call we wait five seconds", "--files", "src/config.py")
    users = _remember(cli, "between retries of a failed users fetch we wait two seconds", "--files", "web/users.js")
    return config, users


def _first_memory(cli) -> dict:
    return cli.json("search", "how long do we wait between retries", "--memories-only", "--explain")["hits"][0]


def test_a_memory_about_the_file_being_edited_leads_flagged_not_sunk(cli, repo):
    """Two decisions about retries, one anchored to the file now being edited: being worked on is why it matters
    now, so it leads (its working-change lift kept), flagged "code changed since"; in `what` too."""
    config, users = _two_retry_decisions(cli, repo)
    with (repo / "src/config.py").open("a", encoding="utf-8") as f:
        f.write("# retries are tuned per environment\n")
    first = _first_memory(cli)
    assert first["id"] == config, first
    assert first["memory"]["code_change"]["in_progress"] is True
    assert first["breakdown"]["boosts"]["modified_file"] > 0 and "code changed" not in first["breakdown"]["boosts"]
    what = cli.json("what")
    assert what["file_memories"][0]["id"] == config and what["file_memories"][0]["code_change"]["in_progress"]


def test_a_change_on_the_branchs_own_commits_is_in_progress_one_on_main_is_not(cli, repo):
    config, users = _two_retry_decisions(cli, repo)
    git(repo, "checkout", "-q", "-b", "tune-retries")
    commit_file(repo, "src/config.py", "RETRY_DELAY_SECONDS = 8\nMAX_RETRIES = 3\n", "Wait longer between retries")
    change = _change(cli, config)
    assert change["commit"] and change["in_progress"] is True
    git(repo, "checkout", "-q", "main")
    git(repo, "merge", "-q", "--ff-only", "tune-retries")
    change = _change(cli, config)
    assert change["commit"] and change["in_progress"] is False
    hits = cli.json("search", "how long do we wait between retries", "--memories-only", "--explain")["hits"]
    demoted = next(h for h in hits if h["id"] == config)
    assert demoted["breakdown"]["boosts"]["code changed"] < 0


def test_a_change_whose_commit_this_clone_lacks_is_not_in_progress(cli, repo):
    """An anchor's commit that is not in this repository (a team memory written in another clone): git cannot say
    which commit changed the code since, and that is not the work going on here."""
    config, _ = _two_retry_decisions(cli, repo)
    # The commit the memories were anchored at is rewritten and pruned, as a squash would leave it.
    git(repo, "commit", "-q", "--amend", "-m", "Add the users page (reworded)")
    git(repo, "reflog", "expire", "--expire=now", "--all")
    git(repo, "gc", "-q", "--prune=now")
    commit_file(repo, "src/config.py", "RETRY_DELAY_SECONDS = 9\nMAX_RETRIES = 3\n", "Wait longer")
    change = _change(cli, config)
    assert change is not None and change["commit"] == "" and change["in_progress"] is False


def test_a_file_named_that_is_not_in_the_tree_is_said_and_kept(cli, repo):
    code, out, err = cli("remember", "Retries back off exponentially", "--files", "src/app.py,src/nope.py")
    assert code == 0 and "remembered" in out
    assert "no such file" in err and "src/nope.py" in err and "src/app.py" not in err.split("no such file", 1)[1]
    code, out, err = cli("remember", "Deploys go out on Tuesdays", "--files", "src/app.py")
    assert code == 0 and "no such file" not in err
