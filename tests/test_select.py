"""Context selection, assembly and the clipboard on real repositories, the real index and real token counts."""

import base64
import json
import os
import re
import shutil
import stat
from datetime import UTC, datetime
from pathlib import Path

import pytest
from cortex_tui.app.link import connection, protocol
from cortex_tui.core import clipboard
from cortex_tui.core.context.assemble import assemble
from cortex_tui.core.context.fitting import Limits, Unit, plan
from cortex_tui.core.context.items import BELOW_FLOOR
from cortex_tui.core.context.select import Item, Selection, named_files
from cortex_tui.core.engine import Engine
from cortex_tui.core.errors import CortexError
from cortex_tui.core.keys import Key
from cortex_tui.core.records import Memory, MemoryDraft
from cortex_tui.core.tokens import count_tokens
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .conftest import Cli, git, indexed_engine

BIG_FUNCS = 60


def project(root):
    files = {
        "shop/cart.py": "from .pricing import price_of\n\nclass Cart:\n    def __init__(self):\n        self.items = []\n\n    def add(self, sku):\n        self.items.append(sku)\n\n    def total(self):\n        return sum(price_of(s) for s in self.items)\n",
        "shop/pricing.py": "TAX = 0.2\n\ndef price_of(sku):\n    return 10 * (1 + TAX)\n",
        "shop/shipping.py": "def shipping_cost(weight):\n    return 5 + weight * 0.5\n",
        "docs/guide.md": "# Guide\n\nHow to use the cart and pricing.\n",
        "tests/test_cart.py": "from shop.cart import Cart\n\ndef test_total():\n    assert Cart().total() == 0\n",
        "shop/big.py": "".join(
            f"def helper_{i}(value):\n    \"\"\"Helper number {i} does arithmetic.\"\"\"\n    result = value * {i} + {i}\n    return result - 1\n\n\n"
            for i in range(BIG_FUNCS)
        ) + "def compute_discount_rate(order):\n    return 0.1 if order > 100 else 0.0\n",
    }
    for path, text in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    engine = Engine(root)
    engine.code_index(create=True).update(embed=False)
    return engine


@pytest.fixture
def shop(repo):
    return project(repo)


def test_named_file_is_chosen_and_total_within_budget(shop):
    sel = shop.select("The tax in shop/pricing.py is applied twice", 2000)
    assert "shop/pricing.py" in sel.files
    assert sel.tokens <= 2000
    assert sel.ranked_files[0] == "shop/pricing.py"
    assert named_files("fix flask.json.tag and cart.py", ["src/flask/json/tag.py", "shop/cart.py"]) == {
        "src/flask/json/tag.py", "shop/cart.py"}


def test_tests_are_left_out_unless_the_task_is_about_them(shop):
    assert not any(p.startswith("tests/") for p in shop.select("Cart total is wrong", 4000, include_tests="no").files)
    about_tests = shop.select("The test for the Cart total fails", 4000, include_tests="auto")
    assert "tests/test_cart.py" in about_tests.ranked_files[:3]


def test_oversized_file_is_reduced_to_its_relevant_symbols(shop):
    big_tokens = count_tokens((shop.root / "shop/big.py").read_text())
    budget = big_tokens // 2
    sel = shop.select("compute_discount_rate returns the wrong rate for big orders", budget)
    reduced = next(i for i in sel.chosen if i.path == "shop/big.py")
    assert reduced.kind == "reduced"
    assert "def compute_discount_rate(order):\n    return 0.1 if order > 100 else 0.0" in reduced.text
    assert "omitted; the definitions there:)" in reduced.text
    assert re.search(r"\n  \d+: def helper_\d+\(value\):\n", reduced.text), "a gap shows the signatures it leaves out"
    assert "... and " in reduced.text, "a gap shows a few signatures, not a second copy of the file"
    assert reduced.text.count("Helper number") < BIG_FUNCS / 2, "most helpers' bodies are left out"
    assert sel.tokens <= budget


def test_memories_are_selected_and_linked_memories_raise_their_files(shop):
    shop.remember(MemoryDraft(text="Shipping cost must include the fuel surcharge.", kind="decision", files=("shop/shipping.py",)))
    sel = shop.select("Shipping cost is too low", 3000)
    kinds = {i.kind for i in sel.chosen}
    assert "memory" in kinds and "shop/shipping.py" in sel.files
    shipping = next(i for i in sel.chosen if i.path == "shop/shipping.py")
    assert shipping.signals["memories"] > 0


@settings(max_examples=200, deadline=None)
@given(
    budget=st.integers(min_value=1, max_value=5000),
    specs=st.lists(st.tuples(st.integers(0, 5), st.integers(1, 1500), st.floats(0.0, 1.0), st.booleans()), max_size=30),
    max_items=st.one_of(st.none(), st.integers(1, 4)),
    max_files=st.one_of(st.none(), st.integers(1, 4)),
)
def test_the_plan_never_exceeds_the_budget_headers_included(budget, specs, max_items, max_files):
    units = [Unit(Key("chunk", str(n)), f"f{file}.py", gain, cost, header=30) for n, (file, cost, gain, _) in enumerate(specs)]
    mandatory = [u for u, spec in zip(units, specs) if spec[3]]
    chosen = plan(units, mandatory, budget, Limits(max_items, max_files))
    files = {u.path for u in chosen}
    assert sum(u.cost for u in chosen) + 30 * len(files) <= budget
    assert max_items is None or len(files) <= max_items
    assert max_files is None or len(files) <= max_files
    assert len({u.key for u in chosen}) == len(chosen)


@pytest.mark.parametrize("fmt", ["markdown", "xml", "json"])
def test_selection_fits_its_format_and_reports_the_exact_count(shop, fmt):
    """The same budget in every format: what is copied fits, nothing is dropped at assembly, and the count the
    selection reports is the count of the assembled document."""
    for budget in (300, 700, 1500, 8000):
        sel = shop.select("cart total pricing tax discount shipping compute_discount_rate", budget, fmt=fmt)
        doc = assemble(sel, fmt)
        assert doc.dropped == [] and len(doc.items) == len(sel.chosen)
        assert doc.tokens == count_tokens(doc.text) == sel.tokens <= budget
        if budget >= 1500:
            assert sel.tokens >= 0.6 * min(budget, 2400), "the budget is used, not left half empty"


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(budget=st.integers(min_value=1, max_value=3000), fmt=st.sampled_from(["markdown", "xml", "json"]))
def test_assembled_context_never_exceeds_the_budget(shop, budget, fmt):
    sel = shop.select("cart total pricing tax discount shipping", budget, fmt=fmt)
    doc = assemble(sel, fmt)
    assert doc.tokens == count_tokens(doc.text) and doc.tokens <= budget
    assert doc.tokens == sel.tokens


def test_secrets_are_redacted_in_every_format():
    memory = Memory("m1", "note", "t", "x", [], [], [], "", "", "repo", "", 1, "active", "",
                    datetime.now(UTC), datetime.now(UTC), datetime.now(UTC), "h")
    secret = "token = 'ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8'"
    items = [Item(Key.file("a.py"), "file", "a.py", f"x = 1\n{secret}\n", 40, 1.0, {}, ranges=((1, 2),)),
             Item(Key.memory("m1"), "memory", "", "AKIAABCDEFGHIJKLMNOP leaked", 20, 0.5, {}, memory=memory)]
    sel = Selection("task", 10_000, "cl100k_base", items, [], ["a.py"])
    for fmt in ("markdown", "xml", "json"):
        doc = assemble(sel, fmt)
        assert "ghp_a1B2" not in doc.text and "AKIAABCDEFGHIJKLMNOP" not in doc.text
        assert doc.redactions == 2 and "«redacted github-pat»" in doc.text
        if fmt == "json":
            assert {i["kind"] for i in json.loads(doc.text)["items"]} == {"file", "memory"}


def test_markdown_is_verbatim_with_provenance_and_memories_first(shop):
    shop.remember(MemoryDraft(text="Prices include tax.", kind="decision", files=("shop/pricing.py",)))
    doc = assemble(shop.select("shop/pricing.py tax price_of", 3000), "markdown")
    assert doc.text.index("## Memory") < doc.text.index("## shop/pricing.py:1-4")
    assert "TAX = 0.2\n\ndef price_of(sku):\n    return 10 * (1 + TAX)" in doc.text


@pytest.mark.parametrize("budget, message", [(0, "positive"), (-5, "positive")])
def test_bad_budgets_and_tasks(shop, budget, message):
    with pytest.raises(CortexError, match=message):
        shop.select("anything", budget)
    with pytest.raises(CortexError, match="empty"):
        shop.select("   ", 1000)


def test_tiny_budget_says_why_and_huge_task_works(shop):
    sel = shop.select("cart total", 3)
    assert sel.chosen == [] and "nothing fits" in sel.notes[0]
    big = shop.select("cart total " * 10_000, 2000)
    assert big.tokens <= 2000


def test_unindexed_repo_is_indexed_on_demand(repo):
    sel = Engine(repo).select("main entry point", 1000)
    assert "indexed" in sel.notes[0] and "src/app.py" in sel.files


def fake_tool(bin_dir, name, record, code=0):
    script = bin_dir / name
    script.write_text(f"#!/bin/sh\n/bin/cat > {record}\nexit {code}\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)


def test_clipboard_cascade_picks_the_first_working_tool(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", str(bin_dir))
    fake_tool(bin_dir, "wl-copy", tmp_path / "wl.txt", code=1)
    fake_tool(bin_dir, "xclip", tmp_path / "xclip.txt")
    result = clipboard.copy("hello ✓")
    assert result.method == "xclip" and (tmp_path / "xclip.txt").read_text() == "hello ✓"
    assert result.bytes == len("hello ✓".encode())


def test_clipboard_falls_back_to_osc52_then_to_a_file(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    sent = []
    result = clipboard.copy("payload", osc52=sent.append, fallback_dir=tmp_path / "osc")
    assert result.method == "osc52" and sent == ["payload"]
    assert open(result.path).read() == "payload" and result.path in result.describe(), "kept in case the terminal drops it"
    seq = clipboard.osc52_sequence("payload")
    assert seq.startswith("\x1b]52;c;") and base64.b64decode(seq[7:-1]) == b"payload"
    big = "x" * (clipboard.OSC52_MAX_BYTES + 1)
    result = clipboard.copy(big, osc52=sent.append, fallback_dir=tmp_path / "out")
    assert result.method == "file" and len(sent) == 1 and "OSC 52 limit" in result.detail
    assert open(result.path).read() == big


def test_clipboard_files_keep_the_newest_copies_and_never_overwrite(tmp_path, monkeypatch):
    """Copies made in one second by one process each get their own file (they shared a name and overwrote each
    other), and the fallback directory keeps only the newest few instead of every copy ever made."""
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    folder = tmp_path / "clipboard"
    stranger = folder / "notes.md"
    folder.mkdir()
    stranger.write_text("not ours")
    paths = [clipboard.copy(f"copy {n}", fallback_dir=folder).path for n in range(clipboard.KEPT_COPIES + 5)]
    assert len(set(paths)) == len(paths)
    left = sorted(p.name for p in folder.glob("cortex-context-*"))
    assert len(left) == clipboard.KEPT_COPIES
    assert open(paths[-1]).read() == f"copy {clipboard.KEPT_COPIES + 4}", "the newest copy is kept"
    assert stranger.read_text() == "not ours", "only our own copies are pruned"
    assert oct(os.stat(paths[-1]).st_mode & 0o777) == "0o600"


def test_cli_context_copy_and_output(shop, repo, capsys, tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake_tool(bin_dir, "xclip", tmp_path / "clip.txt")
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    cli = Cli(repo)
    report = cli.json("context", "tax", "in", "shop/pricing.py", "--budget", "1500", "--copy", "--output", str(tmp_path / "ctx.md"))
    assert report["copied"]["method"] == "xclip" and report["tokens"] <= 1500
    assert (tmp_path / "clip.txt").read_text() == (tmp_path / "ctx.md").read_text()
    # The warm server assembled it (a copy used to load an engine in the client, seconds of it); the clipboard is
    # still this process's (its PATH found the xclip above).
    found = connection.ask(protocol.server_paths(*connection.server_key(str(repo), None)), "status")
    assert found and found["commands"] >= 1, "context --copy went to the resident server"
    (tmp_path / "clip.txt").unlink()
    code, out, err = cli("context", "tax in shop/pricing.py", "--budget", "1500", "--copy")
    assert code == 0 and re.fullmatch(r"copied [\d,]+ tokens, [\d,]+ bytes via xclip\n", out), (out, err)
    assert "def price" in (tmp_path / "clip.txt").read_text()
    chosen = cli.json("select", "tax in shop/pricing.py", "--budget", "1500")
    assert chosen["tokens"] <= 1500 and chosen["chosen"][0]["path"] == "shop/pricing.py"
    assert chosen["frame_tokens"] + sum(i["document_tokens"] for i in chosen["chosen"]) == chosen["tokens"]
    code, _, err = cli("select", "x", "--budget", "0")
    assert code == 1 and "positive" in err


@pytest.mark.parametrize("fmt", ["markdown", "xml", "json"])
def test_a_file_with_uncommitted_changes_is_labelled_working_tree_not_a_commit(shop, repo, fmt):
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "The shop")
    head = git(repo, "rev-parse", "HEAD").strip()[:8]
    (repo / "shop" / "pricing.py").write_text((repo / "shop" / "pricing.py").read_text() + "\n# rounding fixed here\n")
    text = Cli(repo).json("context", "tax in shop/pricing.py and shop/cart.py", "--format", fmt)["text"]
    if fmt == "markdown":
        assert "## shop/pricing.py:" in text and re.search(r"## shop/pricing\.py:\S+ @ working tree", text), text
        assert re.search(rf"## shop/cart\.py:\S+ @ {head}", text), text
    elif fmt == "xml":
        assert re.search(r'<file path="shop/pricing\.py"[^>]* commit="working tree"', text), text
        assert re.search(rf'<file path="shop/cart\.py"[^>]* commit="{head}', text), text
    else:
        files = {i["path"]: i["commit"] for i in json.loads(text)["items"] if i["kind"] != "memory"}
        assert files["shop/pricing.py"] == "working tree" and files["shop/cart.py"].startswith(head), files
    assert "rounding fixed here" in text, text


def test_a_context_kept_in_a_file_is_named_after_its_format(shop, repo, tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake_tool(bin_dir, "xclip", tmp_path / "clip.txt", code=1)
    (bin_dir / "git").symlink_to(shutil.which("git"))
    monkeypatch.setenv("PATH", str(bin_dir))
    report = Cli(repo).json("context", "cart total pricing tax", "--format", "json", "--copy")
    saved = Path(report["copied"]["path"])
    assert saved.suffix == ".json" and json.loads(saved.read_text())


@pytest.mark.parametrize("fmt", ["xml", "json"])
def test_cli_select_and_context_agree_on_the_count_in_a_format(shop, repo, capsys, fmt):
    cli = Cli(repo)
    chosen = cli.json("select", "cart total pricing tax", "--budget", "900", "--format", fmt)
    copied = cli.json("context", "cart total pricing tax", "--budget", "900", "--format", fmt)
    assert chosen["format"] == copied["format"] == fmt
    assert chosen["tokens"] == copied["tokens"] == count_tokens(copied["text"]) <= 900


def test_pinned_file_and_memory_go_in_and_excluded_ones_stay_out(shop):
    shop.remember(MemoryDraft(text="Shipping cost must include the fuel surcharge.", kind="decision", files=("shop/shipping.py",)))
    memory = next(i for i in shop.select("Shipping cost is too low", 3000).chosen if i.kind == "memory")
    task = "cart total and the tax in the price are wrong"
    unpinned = shop.select(task, 150)
    assert memory.key not in {i.key for i in unpinned.chosen}, "the pin, not the value, must bring it in below"
    assert "shop/shipping.py" not in unpinned.files
    sel = shop.select(task, 150, pins=frozenset({Key.file("shop/shipping.py"), memory.key}),
                      excluded=frozenset({Key.file("shop/cart.py")}))
    assert "shop/shipping.py" in sel.files and memory.key in {i.key for i in sel.chosen}
    assert "shop/cart.py" not in sel.files and "shop/cart.py" not in sel.ranked_files
    assert sel.tokens <= 150


def test_housekeeping_examples_and_fixtures_rank_under_the_code_unless_the_task_is_about_them(tmp_path):
    """A licence, a CI workflow, an example app and a test fixture that repeat the task's words more often than the
    code does rank under the code for a code task. Once the task is about them the example and the fixture come
    first; the licence and the workflow, project records, come in but after the code (`ASKED_RECORDS`)."""
    words = "The shipping surcharge for heavy parcels is rounded down instead of up.\n"
    files = {
        "shop/shipping.py": "import math\n\n\ndef surcharge(weight):\n    \"\"\"Shipping surcharge for heavy parcels.\"\"\"\n"
                            "    return math.floor(weight / 10)\n",
        "LICENSE": words * 30,
        ".github/workflows/ci.yml": "name: ci\njobs:\n  shipping:\n    steps:\n" + "".join(f"      - run: echo {words}" for _ in range(10)),
        "examples/parcels/app.py": "".join(f"# {words}" for _ in range(30)) + "from shop.shipping import surcharge\n",
        "shop/testdata/parcels.txt": words * 30,
    }
    for path, text in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    engine = Engine(tmp_path)
    engine.code_index(create=True).update(embed=False)
    ranked = engine.select("shipping surcharge for heavy parcels is rounded down", 4000).ranked_files
    assert ranked[0] == "shop/shipping.py", ranked
    for path, about in (("examples/parcels/app.py", "example"), ("shop/testdata/parcels.txt", "tests")):
        on_topic = engine.select(f"{about}: shipping surcharge for heavy parcels is rounded down", 4000)
        assert on_topic.ranked_files.index(path) < on_topic.ranked_files.index("shop/shipping.py"), (about, on_topic.ranked_files)
    for path, about in (("LICENSE", "licence"), (".github/workflows/ci.yml", "ci workflow")):
        on_topic = engine.select(f"{about}: shipping surcharge for heavy parcels is rounded down", 4000).ranked_files
        assert on_topic[0] == "shop/shipping.py" and path in on_topic, (about, on_topic)


def _unit_filler(prefix: str, n: int) -> str:
    """Plausible definitions that share no word with the tasks below."""
    return "".join(f"def {prefix}_{i}(value, scale=1):\n    \"\"\"Convert unit {i} of the {prefix} table.\"\"\"\n"
                   f"    result = value * {i + 3} / scale\n    if result < 0:\n        return 0\n    return result\n\n\n"
                   for i in range(n))


def test_a_file_whose_many_regions_match_outranks_one_lucky_region(repo):
    """A tiny module saying the task's three words once is full text's first hit; the client whose four functions
    each say them is its 2nd to 5th. The client is the file the task is about, and ranks first."""
    steps = "".join(f"def step_{i}(conn):\n    \"\"\"Step {i}: after a socket timeout the client will reconnect.\"\"\"\n"
                    + "".join(f"    conn.wait({i}, {j})\n" for j in range(25)) + "    return conn\n\n\n" for i in range(4))
    engine = indexed_engine(repo, {
        "net/probe.py": "def probe():\n    \"\"\"socket timeout reconnect\"\"\"\n    return 'socket timeout reconnect'\n",
        "net/client.py": steps + _unit_filler("misc", 30),
    })
    ranked = engine.select("Fix the socket timeout on reconnect", 4000).ranked_files
    assert ranked[:2] == ["net/client.py", "net/probe.py"], ranked


def test_a_clearly_leading_file_is_read_in_depth_and_what_trails_far_stays_out(repo):
    """Three functions of the invoice module are about the task and the ledger mentions one of its words: the
    invoice module, far ahead, is read whole, and the ledger, trailing far behind it, is not glimpsed even with
    room for both."""
    totals = "".join(f"def invoice_total_{i}(lines):\n    \"\"\"Invoice total {i}: rounding of the invoice totals.\"\"\"\n"
                     + "".join(f"    lines.append(round({j} * 1.5, 2))\n" for j in range(12)) + "    return sum(lines)\n\n\n"
                     for i in range(3))
    ledger = ("def ledger_rounding(entries):\n    \"\"\"Rounding in the ledger.\"\"\"\n"
              + "".join(f"    entries.append({j})\n" for j in range(12)) + "    return entries\n\n\n")
    engine = indexed_engine(repo, {"billing/invoice.py": totals + _unit_filler("invoice_unit", 40),
                               "billing/ledger.py": ledger + _unit_filler("ledger_unit", 20)})
    task = "Fix rounding of invoice totals"
    tight = engine.select(task, 3000)
    assert [(i.path, i.kind) for i in tight.chosen] == [("billing/invoice.py", "file")], tight.chosen
    roomy = engine.select(task, 6000)
    assert [(i.path, i.kind) for i in roomy.chosen] == [("billing/invoice.py", "file")], roomy.chosen
    # The ledger trails the invoice module by far: with room to spare it stays out, below the lead's floor.
    assert {i.path: i.reason for i in roomy.left_out}["billing/ledger.py"] == BELOW_FLOOR


def test_a_select_reads_its_candidates_rows_and_the_import_graph_once_per_table_version(shop, repo):
    import threading

    from .conftest import git
    from .test_scale_paths import CountingTable, many_files

    many_files(repo, 200)
    git(repo, "add", "gen")
    git(repo, "commit", "-qm", "Generated modules")  # committed: not candidates as part of the working change
    shop.code_index().update(embed=False)
    index = shop.code_index()
    index.files = files = CountingTable(index.files)
    total = index.files.count_rows()
    tasks = ["The tax in shop/pricing.py is applied twice", "Make compute_discount_rate handle refunds",
             "cart total ignores quantities"]
    # Threads sharing the engine (the dashboard's, the server's) build the import graph once between them.
    threads = [threading.Thread(target=shop.select, args=(t, 2000)) for t in tasks]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert files.reads.count(total) == 1
    files.reads.clear()
    named, defined, near = (shop.select(t, 2000) for t in tasks)
    assert named.ranked_files[0] == "shop/pricing.py"
    assert "shop/big.py" in defined.files
    assert "shop/pricing.py" in near.ranked_files  # imported by the cart: the graph still ranks it
    assert files.reads and max(files.reads) < 20 and sum(files.reads) < total / 4, files.reads
    # Another process writes the table: the next select sees the new version and builds the graph again, once.
    (repo / "shop/coupons.py").write_text("from .pricing import price_of\n\ndef coupon(sku):\n    return price_of(sku) / 2\n")
    Engine(repo).code_index().update(embed=False)
    files.reads.clear()
    for _ in range(2):
        assert "shop/coupons.py" in shop.select("Halve the coupon price in shop/coupons.py", 2000).files
    assert files.reads.count(total + 1) == 1 and max(r for r in files.reads if r != total + 1) < 20, files.reads


def test_the_import_graph_ranks_as_pagerank_on_its_undirected_graph():
    """The import graph without networkx: each import one undirected edge however often it is listed, a file
    importing itself one entry on the diagonal, imports of files not indexed left out, a file without imports
    dangling. The ranks equal a dense power iteration of networkx's personalised PageRank on that graph (the code
    that used networkx passes it too: it guards the equivalence)."""
    import numpy as np
    from cortex_tui.core.context.select_files import ImportGraph

    rows = [{"path": "a.py", "imports": ["b.py", "a.py", "b.py"]}, {"path": "b.py", "imports": ["c.py", "a.py"]},
            {"path": "c.py", "imports": None}, {"path": "d.py", "imports": ["gone.py"]}, {"path": "e.py", "imports": ["c.py"]}]
    graph = ImportGraph.build(rows)
    assert graph.nodes == ["a.py", "b.py", "c.py", "d.py", "e.py"] and graph.edges == 4
    dense = np.zeros((5, 5))
    for x, y in ((0, 1), (0, 0), (1, 2), (4, 2)):
        dense[x, y] = dense[y, x] = 1.0
    out = dense.sum(axis=1)
    matrix = np.divide(dense, out[:, None], out=np.zeros_like(dense), where=out[:, None] > 0)
    personal = np.array([1.0, 0, 0, 0, 0])
    x = np.full(5, 0.2)
    for _ in range(200):
        x = 0.85 * (x @ matrix + x[out == 0].sum() * personal) + 0.15 * personal
    expected = {p: float(v) for p, v in zip(graph.nodes[1:], x[1:])}
    top = max(expected.values())
    assert graph.proximity(["a.py"]) == pytest.approx({p: v / top for p, v in expected.items()}, rel=1e-5)
