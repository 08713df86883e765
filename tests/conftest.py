"""Shared fixtures: real git repositories in tmp dirs, an isolated global store and cache, and `cortex` run the way
users run it: through the repository's resident server (started on first use, stopped after each test), or in this
process with an explicit context where the two paths can differ (`both_modes`)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
from cortex_tui.app.cli import client
from cortex_tui.app.cli.context import CommandContext
from cortex_tui.app.cli.main import main as cli_main
from cortex_tui.app.link import connection, protocol

# A suite started in the background by a non-interactive shell inherits SIGINT ignored, and so would every `cortex`
# a test starts: the tests that press Ctrl+C on `cortex watch` and `cortex serve` waited for an exit that never came.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test Author",
    "GIT_AUTHOR_EMAIL": "author@example.com",
    "GIT_COMMITTER_NAME": "Test Author",
    "GIT_COMMITTER_EMAIL": "author@example.com",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_CONFIG_SYSTEM": "/dev/null",
}


MODES = ("served", "in-process")
both_modes = pytest.mark.parametrize("cli", MODES, indirect=True)
"""For CLI tests whose command could behave differently in the server and in-process (streams, terminal,
standard input, working directory, environment): run them both ways."""


both = pytest.mark.parametrize("served", [True, False], ids=MODES)
"""For dashboard tests whose answers could differ between a dashboard attached to the resident server (the default)
and one with an engine of its own (`--no-daemon`): run them both ways."""


def bridge_for(path: Path, served: bool = True):
    """What `cortex-tui` opens: a bridge to the repository's resident server (started if need be), or with
    `served=False` one over an engine of this process."""
    from cortex_tui.app.bridge.local import EngineBridge
    from cortex_tui.app.link.remote import Remote
    from cortex_tui.app.tui.early import EarlyBridge
    from cortex_tui.app.tui.session import new_session
    from cortex_tui.core.engine import Engine

    if not served:
        return EngineBridge(Engine(path))
    remote = Remote.attach(path, None, start=True)
    assert remote is not None, "no resident server could be started"
    return EarlyBridge(remote, new_session())


def watching(bridge) -> bool:
    """The bridge's watcher (its own, or the resident server's) has its watch in place."""
    from cortex_tui.app.bridge.local import EngineBridge

    if isinstance(bridge, EngineBridge):
        return bridge.watcher is not None and bridge.watcher.ready.is_set()
    found = connection.ask(protocol.server_paths(*connection.server_key(str(bridge.root), None)), "status")
    return bool(found and found.get("watching"))


PROCESS_FIXTURES = {"runtime", "s3", "team"}
"""Fixtures that start processes: a runtime directory of a test's own (its servers), the S3-API server."""
PROCESS_FILES = {"test_crash.py", "test_concurrency.py", "test_serve.py", "test_server_memory.py", "test_team.py",
                 "test_mcp.py", "test_recall_http.py", "test_cli_text.py", "test_dashboard_items.py", "test_progress.py",
                 "test_index_process.py", "test_index_background.py", "test_select_shaping.py", "test_hooks.py", "test_sessions.py",
                 "test_meter_live.py", "test_issue_comment.py", "test_write_receipts.py",
                 "test_packaging.py"}
"""Files whose tests all run `cortex`, a server or a crash in processes of their own."""
PROCESS_TESTS = {
    "test_agent_files.py::test_the_cli_says_what_an_import_did_and_refuses_a_different_context",
    "test_agent_files.py::test_the_live_files_follow_every_cli_operation_and_read_back_as_the_store",
    "test_agentlog.py::test_concurrent_processes_get_distinct_gap_free_steps",
    "test_agentlog.py::test_the_cli_drives_a_session_and_search_finds_committed_steps",
    "test_agentlog.py::test_init_and_branches_print_as_text",
    "test_api.py::test_the_engine_loads_when_the_api_is_first_used_not_when_the_package_is_imported",
    "test_architecture.py::test_importing_the_engine_loads_no_textual",
    "test_architecture.py::test_the_engine_imports_lancedb_without_its_rest_client",
    "test_cli.py::test_import_markdown_and_jsonl_then_export_round_trip",
    "test_import_export.py::test_bringing_a_vector_index_up_to_date_prints_no_lancedb_warning",
    "test_cli.py::test_index_prints_progress_lines_when_not_a_terminal_and_skipped_only_lists",
    "test_cli.py::test_index_on_a_terminal_shows_the_rate_and_what_is_left",
    "test_cli.py::test_watch_says_what_each_update_did_in_the_dashboards_words",
    "test_cli.py::test_missing_path_before_the_command_is_one_line",
    "test_cli.py::test_non_git_directory_works",
    "test_cli.py::test_reads_on_a_directory_without_a_database_say_so",
    "test_dashboard.py::test_a_code_preview_starts_at_the_code_with_its_line_numbers",
    "test_dashboard.py::test_a_first_run_says_it_made_cortex_and_that_the_server_stays_after_q",
    "test_dashboard.py::test_a_code_preview_opens_at_the_definition_asked_for_in_a_chunk_of_several",
    "test_dashboard.py::test_a_megabyte_memory_is_shown_as_a_prefix_and_its_size",
    "test_dashboard.py::test_a_missing_path_is_one_line_error_not_the_demo",
    "test_dashboard.py::test_an_unknown_theme_or_option_is_one_line_error",
    "test_dashboard.py::test_bidirectional_overrides_in_subjects_and_titles_are_shown_not_obeyed",
    "test_dashboard.py::test_footer_names_one_quit",
    "test_dashboard.py::test_help_screen_theme_switch_and_narrow_terminal",
    "test_dashboard.py::test_keys_move_in_every_pane_and_pane_numbers_never_type",
    "test_dashboard.py::test_keys_typed_in_one_burst_after_n_go_to_the_new_memory_text",
    "test_dashboard.py::test_keys_typed_in_one_burst_after_slash_go_to_the_search_box",
    "test_dashboard.py::test_m_shows_the_repo_map_of_the_working_change_as_text",
    "test_dashboard.py::test_markup_in_commit_subjects_and_memory_titles_is_shown_as_text",
    "test_dashboard.py::test_q_and_ctrl_c_quit_while_an_engine_call_is_still_running",
    "test_dashboard.py::test_the_meter_bar_fills_the_pane_at_every_width",
    "test_dashboard.py::test_the_meter_counts_exactly_what_c_copies_in_every_format",
    "test_dashboard.py::test_the_top_bar_counts_the_files_index_status_counts",
    "test_dashboard.py::test_wide_terminals_show_whole_paths_ranges_why_and_subjects",
    "test_dashboard.py::test_without_a_clipboard_tool_the_context_is_sent_by_osc52_and_kept_in_a_file",
    "test_dashboard.py::test_x_drops_the_highlighted_row_and_u_or_x_brings_it_back",
    "test_corruption.py::test_doctor_in_its_own_process_prints_no_rust_panic",
    "test_dashboard_start.py::test_an_attached_dashboard_makes_none_of_its_first_calls_itself",
    "test_dashboard_start.py::test_an_answer_asked_ahead_is_not_taken_after_a_write",
    "test_dashboard_start.py::test_an_attached_dashboard_fills_its_first_panes_without_pane_fives_modules",
    "test_dashboard_start.py::test_an_attached_dashboard_fills_its_first_panes_without_modules_they_do_not_need",
    "test_dashboard_start.py::test_an_attached_dashboard_collects_no_garbage_until_its_first_panes_then_does_again",
    "test_dates.py::test_cli_shows_each_memory_date",
    "test_disk.py::test_sustained_single_writes_keep_the_table_within_twice_its_compacted_size",
    "test_engine_calls.py::test_every_call_and_request_crosses_the_server_as_plain_data",
    "test_engine_calls.py::test_the_server_runs_no_call_outside_the_protocols",
    "test_graph_mentions.py::test_extraction_on_a_megabyte_is_bounded",
    "test_graph_mentions.py::test_graph_and_expanded_search_with_a_near_limit_memory",
    "test_live_panes.py::test_a_memory_another_process_writes_appears_in_the_open_dashboard",
    "test_live_panes.py::test_rm_rf_cortex_shows_the_new_empty_state_and_the_watcher_runs",
    "test_llm_filter.py::test_cli_filter_flag_uses_the_configured_model",
    "test_search_code.py::test_the_cli_shows_the_definition_first_in_the_engines_order",
    "test_search_code.py::test_a_question_in_everyday_words_finds_the_code_that_says_them_otherwise",
    "test_search_results.py::test_snippets_show_the_lines_that_match_with_their_numbers",
    "test_secrets.py::test_seeded_corpus_nothing_stored_searchable_copied_or_shown",
    "test_select.py::test_cli_context_copy_and_output",
    "test_select.py::test_cli_select_and_context_agree_on_the_count_in_a_format",
    "test_select.py::test_a_file_with_uncommitted_changes_is_labelled_working_tree_not_a_commit",
    "test_select.py::test_a_context_kept_in_a_file_is_named_after_its_format",
    "test_tokens.py::test_counting_builds_only_the_encoding_asked_for",
    "test_versions.py::test_each_command_prints_the_installed_version",
    "test_what_graph.py::test_cli_search_what_graph",
}
"""Tests elsewhere that start processes. `_processes_marked` fails a test that starts one and is not listed."""
ONE_WORKER_FILES = {"test_team.py", "test_localize_frozen.py"}
"""Files whose module fixture (an S3-API server, a frozen benchmark run) is worth making once: under
`--dist loadgroup` each runs on one worker."""
SLOW_TESTS: set[str] = set()
"""In-process tests that take tens of seconds: left out of the fast lane too."""


@pytest.hookimpl(tryfirst=True)  # before xdist's, which reads `xdist_group` markers
def pytest_collection_modifyitems(config, items):
    """Markers by what a test starts, so that `-m "not process and not slow"` is a lane of in-process tests."""
    for item in items:
        name = f"{item.path.name}::{item.originalname}"
        params = getattr(item, "callspec", None)
        params = params.params if params else {}
        served = ("cli" in item.fixturenames and params.get("cli", "served") == "served") or params.get("served")
        if (served or item.path.name in PROCESS_FILES or name in PROCESS_TESTS
                or PROCESS_FIXTURES & set(item.fixturenames)):
            item.add_marker(pytest.mark.process)
        if name in SLOW_TESTS:
            item.add_marker(pytest.mark.slow)
        if item.path.name in ONE_WORKER_FILES:
            item.add_marker(pytest.mark.xdist_group(item.path.stem))


_spawned: list[str] = []


def _record_spawn(event: str, args: tuple) -> None:
    if event != "subprocess.Popen":
        return
    argv = [str(a) for a in (args[1] if isinstance(args[1], (list, tuple)) else [args[1]])]
    # An index pass's child is the engine's own way of indexing, not a process a test starts.
    if argv and argv[0] == sys.executable and not any(a.endswith("index_process") for a in argv):
        _spawned.append(" ".join(argv)[:200])


sys.addaudithook(_record_spawn)


@pytest.fixture(autouse=True)
def _processes_marked(request):
    """A test that starts a Python process (`cortex`, a resident server, a script) must be marked `process`, or
    the fast lane would quietly wait on processes."""
    _spawned.clear()
    yield
    if _spawned and request.node.get_closest_marker("process") is None:
        pytest.fail(f"started {_spawned[0]!r} but is not marked `process` (see PROCESS_TESTS in conftest.py)",
                    pytrace=False)


@pytest.fixture(scope="session", autouse=True)
def _isolated_cache(tmp_path_factory):
    os.environ["CORTEX_CACHE_DIR"] = str(tmp_path_factory.mktemp("cache"))
    os.environ["CORTEX_CONFIG"] = str(tmp_path_factory.mktemp("config") / "config.toml")
    os.environ.update(GIT_ENV)
    # Servers of this session live in a runtime directory of its own (a short path: socket addresses are limited to
    # 108 bytes), never a developer's; each test stops the ones it started (see _servers_stopped).
    runtime = Path(tempfile.mkdtemp(prefix="cxt-"))
    os.environ["CORTEX_RUNTIME_DIR"] = str(runtime)
    os.environ["CORTEX_DAEMON_IDLE_MINUTES"] = "10"  # a safety net should the session die before its teardown
    for name in ("CORTEX_NO_DAEMON", "CORTEX_DAEMON"):
        os.environ.pop(name, None)
    yield
    stop_servers(runtime)
    shutil.rmtree(runtime, ignore_errors=True)


@pytest.fixture(autouse=True)
def _servers_stopped():
    """A test's servers end with it: each holds an engine and the model (hundreds of MiB), and a server left over
    would answer the next test's commands with a warm cache that test did not make."""
    yield
    stop_servers(Path(os.environ["CORTEX_RUNTIME_DIR"]))
    # A daemon setting left in this worker's environment would quietly run every later test in-process.
    left = [name for name in ("CORTEX_NO_DAEMON", "CORTEX_DAEMON") if name in os.environ]
    if left:
        for name in left:
            os.environ.pop(name)
        pytest.fail(f"the test left {left[0]} set in the environment of the test process", pytrace=False)


def stop_servers(runtime: Path) -> None:
    """Stop every server with a status file in `runtime` (killed if it does not stop within a minute)."""
    for info in runtime.glob("*.json"):
        try:
            pid = json.loads(info.read_text())["pid"]
        except (OSError, ValueError, KeyError):
            continue
        paths = protocol.ServerPaths(*(str(info.with_suffix(s)) for s in (".sock", ".lock", ".json", ".log")))
        if process_alive(pid):
            os.kill(pid, signal.SIGCONT)  # a test may have stopped it
        if connection.ask(paths, "stop") is None or not connection.wait_stopped(paths, 60):
            if process_alive(pid):
                os.kill(pid, signal.SIGKILL)


def read_terminal(leader: int) -> tuple[bytearray, threading.Thread]:
    """Everything written to a pseudo-terminal, read from its leader side all along in a thread (started): a
    terminal nobody reads fills up and stops the process writing to it."""
    out = bytearray()

    def read() -> None:
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:
                return
            if not chunk:
                return
            out.extend(chunk)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    return out, reader


def live_processes() -> list[tuple[int, list[bytes], Path]]:
    """(pid, command line, /proc entry) of every live process, from /proc."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if process_alive(int(entry.name)):
            found.append((int(entry.name), argv, entry))
    return found


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is gone for our purposes
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return True


@pytest.fixture(autouse=True)
def _isolated_global(tmp_path, monkeypatch):
    monkeypatch.setenv("CORTEX_GLOBAL_DB", str(tmp_path / "global-db"))
    monkeypatch.delenv("CORTEX_DB", raising=False)


def wait_for(predicate, seconds=15.0):
    """Poll `predicate` until it holds or `seconds` pass: for work another thread or process does. Returns its
    first true value (a status read, a list), or False at the deadline."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if found := predicate():
            return found
        time.sleep(0.05)
    return False


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def indexed_engine(repo: Path, files: dict[str, str]):
    """An engine over `repo` with `files` committed and indexed lexically (no model needed)."""
    from cortex_tui.core.engine import Engine

    for path, text in files.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "Add the modules")
    engine = Engine(repo)
    engine.code_index(create=True).update(embed=False)
    return engine


def commit_file(repo: Path, path: str, content: str, message: str) -> str:
    target = repo / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(content, encoding="utf-8")
    git(repo, "add", path)
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD").strip()


@pytest.fixture
def empty_repo(tmp_path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    return repo


@pytest.fixture
def repo(empty_repo) -> Path:
    commit_file(empty_repo, "src/app.py", "def main():\n    return 1\n", "Add the app entry point")
    commit_file(empty_repo, "README.md", "# demo\n", "Write a readme")
    return empty_repo


SHOP_FILES = {
    "shop/pricing.py": "TAX = 0.2\n\ndef price_of(sku):\n    return 10 * (1 + TAX)\n",
    "shop/cart.py": "from .pricing import price_of\n\nclass Cart:\n    def total(self, items):\n"
                    "        return sum(price_of(i) for i in items)\n",
}


@pytest.fixture(scope="session")
def _indexed_shop(tmp_path_factory) -> Path:
    """The shop repository (an app, a readme, pricing and a cart, a decision and an open task), indexed with
    embeddings, made once per test process: a dashboard test copies it instead of indexing its own."""
    from cortex_tui.core.engine import Engine
    from cortex_tui.core.records import MemoryDraft

    base = tmp_path_factory.mktemp("indexed-shop")
    repo = base / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    commit_file(repo, "src/app.py", "def main():\n    return 1\n", "Add the app entry point")
    commit_file(repo, "README.md", "# demo\n", "Write a readme")
    commit_file(repo, "shop/pricing.py", SHOP_FILES["shop/pricing.py"], "Add pricing")
    commit_file(repo, "shop/cart.py", SHOP_FILES["shop/cart.py"], "Add cart")
    # Never a developer's stores (a test's own are set after this fixture, by `_isolated_global`).
    with own_stores(base):
        engine = Engine(repo)
        engine.remember(MemoryDraft(text="Prices include tax; never add it twice.", kind="decision",
                                    files=("shop/pricing.py",)))
        engine.remember(MemoryDraft(text="Add a fuel surcharge to shipping.", kind="task"))
        engine.code_index(create=True).update()
        engine.close()
    return repo


@pytest.fixture
def shop(_indexed_shop, tmp_path) -> Path:
    """A copy of the indexed shop repository (file times kept, so its index is fresh)."""
    return copy_of(_indexed_shop, tmp_path)


@contextlib.contextmanager
def own_stores(base: Path):
    """While a session fixture builds a repository: no database named by the environment, and a global store of
    its own under `base`, whatever the developer's environment says; the environment as it was afterwards."""
    saved = {name: os.environ.pop(name, None) for name in ("CORTEX_GLOBAL_DB", "CORTEX_DB")}
    os.environ["CORTEX_GLOBAL_DB"] = str(base / "global-db")
    try:
        yield
    finally:
        for name, value in saved.items():
            os.environ.pop(name, None)
            if value is not None:
                os.environ[name] = value


def copy_of(built: Path, tmp_path: Path) -> Path:
    """A test's own copy of a repository a session fixture built (file times kept, so its index stays fresh)."""
    repo = tmp_path / "repo"
    shutil.copytree(built, repo, symlinks=True)
    return repo


class Cli:
    """Runs `cortex` against one directory and returns (exit code, stdout, stderr): `served` as the installed
    command does (the thin client, which hands the command to the repository's resident server and starts one if
    need be), else in this process through `cli.main` with a context of its own."""

    def __init__(self, cwd: Path, served: bool = True) -> None:
        self.cwd = cwd
        self.served = served

    def __call__(self, *args: str) -> tuple[int, str, str]:
        argv = [args[0], "-C", str(self.cwd), *args[1:]]
        out, err = io.StringIO(), io.StringIO()
        if self.served:
            # The client leaves os.environ alone (`--no-daemon` goes to its children in their own environment), so
            # running it in this worker's process turns no later test in-process.
            with redirect_stdout(out), redirect_stderr(err):
                code = client.main(argv)
        else:
            code = cli_main(argv, CommandContext(sys.stdin, out, err, Path.cwd(), os.environ))
        return code, out.getvalue(), err.getvalue()

    def json(self, *args: str):
        code, out, err = self(*args, "--json")
        assert code == 0, err
        return json.loads(out)


@pytest.fixture
def cli(repo, request) -> Cli:
    """Served by default; `both_modes` runs a test once each way."""
    return Cli(repo, served=getattr(request, "param", "served") == "served")
