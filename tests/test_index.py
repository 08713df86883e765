"""The code index on real git repositories: what is listed, chunked, linked, skipped, and kept fresh."""

import os
import subprocess

import numpy as np
import pytest
from cortex_tui.core.engine import Engine
from cortex_tui.core.store.sql import scan

from .conftest import commit_file, git

FIXTURES = {
    "python": {
        "pkg/__init__.py": "",
        "pkg/util.py": "def helper(x):\n    return x * 2\n",
        "pkg/main.py": "from .util import helper\nimport pkg.models\n\nclass Runner:\n    def run(self):\n        return helper(1)\n",
        "pkg/models.py": "class Model:\n    pass\n",
    },
    "javascript": {
        "web/util.js": "export function formatDate(d) {\n  return d.toISOString();\n}\n",
        "web/app.js": "import { formatDate } from './util';\nconst lib = require('./lib/index.js');\nexport class App {\n  render() { return formatDate(new Date()); }\n}\n",
        "web/lib/index.js": "module.exports = {};\n",
    },
    "typescript": {
        "tsconfig.json": '{\n  // comment\n  "compilerOptions": {"baseUrl": ".", "paths": {"@core/*": ["ts/core/*"]}},\n}\n',
        "ts/core/types.ts": "export interface User {\n  id: string;\n}\nexport type Id = string;\n",
        "ts/service.ts": "import { User } from '@core/types';\nexport const loadUser = async (id: string): Promise<User> => ({ id });\n",
        "ts/view.tsx": "import { loadUser } from './service';\nexport function UserView() {\n  return <div>{String(loadUser)}</div>;\n}\n",
    },
    "go": {
        "go.mod": "module example.com/shop\n\ngo 1.22\n",
        "cart/cart.go": "package cart\n\ntype Cart struct {\n\tItems []string\n}\n\nfunc (c *Cart) Add(item string) {\n\tc.Items = append(c.Items, item)\n}\n",
        "main.go": 'package main\n\nimport (\n\t"fmt"\n\t"example.com/shop/cart"\n)\n\nfunc main() {\n\tc := cart.Cart{}\n\tfmt.Println(c)\n}\n',
    },
    "rust": {
        "src/lib.rs": "pub mod parser;\nuse crate::parser::Token;\n\npub fn tokens() -> Vec<Token> { vec![] }\n",
        "src/parser.rs": "pub struct Token {\n    pub text: String,\n}\n\nimpl Token {\n    pub fn new() -> Self { Token { text: String::new() } }\n}\n",
    },
    "java": {
        "java/com/acme/Order.java": "package com.acme;\n\npublic class Order {\n    public int total() { return 0; }\n}\n",
        "java/com/acme/Shop.java": "package com.acme;\n\nimport com.acme.Order;\n\npublic class Shop {\n    public Order order() { return new Order(); }\n}\n",
    },
    "ruby": {
        "lib/greeter.rb": "module Greeter\n  def self.hello(name)\n    \"hi #{name}\"\n  end\nend\n",
        "app.rb": "require_relative 'lib/greeter'\n\nclass App\n  def call\n    Greeter.hello('x')\n  end\nend\n",
    },
    "c": {
        "csrc/buf.h": "struct buf { int len; };\nint buf_len(struct buf *b);\n",
        "csrc/buf.c": '#include "buf.h"\n\nint buf_len(struct buf *b) {\n    return b->len;\n}\n',
    },
    "cpp": {
        "cpp/shape.hpp": "class Shape {\npublic:\n  virtual double area() const = 0;\n};\n",
        "cpp/circle.cpp": '#include "shape.hpp"\n\nnamespace geo {\nclass Circle : public Shape {\npublic:\n  double area() const override { return 3.14; }\n};\n}\n',
    },
}

EXPECTED_SYMBOLS = {
    "pkg/main.py": {"Runner", "Runner.run"},
    "web/app.js": {"App"},
    "web/util.js": {"formatDate"},
    "ts/core/types.ts": {"User", "Id"},
    "ts/service.ts": {"loadUser"},
    "ts/view.tsx": {"UserView"},
    "cart/cart.go": {"Cart", "Add"},
    "src/parser.rs": {"Token"},
    "java/com/acme/Shop.java": {"Shop", "Shop.order"},
    "lib/greeter.rb": {"Greeter", "Greeter.hello"},
    "csrc/buf.c": {"buf_len"},
    "cpp/circle.cpp": {"geo"},
}

EXPECTED_IMPORTS = {
    "pkg/main.py": {"pkg/util.py", "pkg/models.py"},
    "web/app.js": {"web/util.js", "web/lib/index.js"},
    "ts/service.ts": {"ts/core/types.ts"},
    "ts/view.tsx": {"ts/service.ts"},
    "main.go": {"cart/cart.go"},
    "src/lib.rs": {"src/parser.rs"},
    "java/com/acme/Shop.java": {"java/com/acme/Order.java"},
    "app.rb": {"lib/greeter.rb"},
    "csrc/buf.c": {"csrc/buf.h"},
    "cpp/circle.cpp": {"cpp/shape.hpp"},
}


def write_all(root, files):
    for path, text in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


@pytest.fixture
def polyglot(empty_repo):
    for files in FIXTURES.values():
        write_all(empty_repo, files)
    git(empty_repo, "add", "-A")
    git(empty_repo, "commit", "-q", "-m", "Polyglot fixture")
    return empty_repo


def chunk_rows(index, path):
    return index.chunks.search().where(f"path = '{path}'").limit(100).to_list()


def file_row(index, path):
    rows = index.files.search().where(f"path = '{path}'").limit(1).to_list()
    return rows[0] if rows else None


def test_symbol_chunks_and_import_edges_for_every_language(polyglot):
    index = Engine(polyglot).code_index(create=True)
    report = index.update(embed=False)
    assert report.changed == sum(len(f) for f in FIXTURES.values())
    for path, expected in EXPECTED_SYMBOLS.items():
        symbols = {s.split(".")[-2] + "." + s.split(".")[-1] if "." in s else s for r in chunk_rows(index, path) for s in r["symbols"]}
        short = {s.rsplit(".", 1)[-1] for r in chunk_rows(index, path) for s in r["symbols"]}
        assert all(e in symbols or e in short for e in expected), (path, symbols)
    for path, expected in EXPECTED_IMPORTS.items():
        assert set(file_row(index, path)["imports"]) == expected, path
    edges = index.edges.search().where("kind = 'imports' AND src = 'pkg/main.py'").limit(10).to_list()
    assert {e["dst"] for e in edges} == {"pkg/util.py", "pkg/models.py"}
    defines = index.edges.search().where("kind = 'defines' AND dst = 'sym:Runner.run'").limit(10).to_list()
    assert len(defines) == 1
    main = file_row(index, "pkg/main.py")
    assert main["language"] == "python" and main["last_author"] == "Test Author" and main["last_commit_time"] is not None
    for row in chunk_rows(index, "pkg/main.py"):
        lines = (polyglot / "pkg/main.py").read_text().splitlines(keepends=True)
        assert row["text"] == "".join(lines[row["start_line"] - 1 : row["end_line"]])
        assert row["tokens"] > 0


def test_ignore_rules_and_skips(repo):
    write_all(repo, {
        ".gitignore": "build/\n*.log\n",
        "sub/.gitignore": "local_only.py\n",
        "sub/local_only.py": "x = 1\n",
        "sub/kept.py": "y = 2\n",
        "build/out.py": "z = 3\n",
        "debug.log": "noise\n",
        "excluded.py": "w = 4\n",
        "cortex_skip.py": "v = 5\n",
        ".cortexignore": "cortex_skip.py\n",
        ".env": "API_KEY=supersecret\n",
        "deploy.pem": "-----BEGIN RSA PRIVATE KEY-----\nabc\n-----END RSA PRIVATE KEY-----\n",
        "config.py": "AWS_KEY = 'AKIAABCDEFGHIJKLMNOP'\n",
        "blob.bin": "",
        "latin.py": "",
        "app.min.js": "var a=1;" * 2000,
    })
    (repo / "blob.bin").write_bytes(b"\x00\x01\x02binary")
    (repo / "latin.py").write_bytes(b"name = '\xe9t\xe9'\n")
    (repo / "huge.txt").write_text("x" * 2_000_000)
    (repo / ".git" / "info" / "exclude").write_text("excluded.py\n")
    index = Engine(repo).code_index(create=True)
    report = index.update(embed=False)
    indexed = {r["path"] for r in index.files.search().limit(100).to_list()}
    assert {"sub/kept.py", "src/app.py", "README.md"} <= indexed
    for path in ("sub/local_only.py", "build/out.py", "debug.log", "excluded.py", "cortex_skip.py"):
        assert path not in indexed
    reasons = dict(report.skipped)
    assert reasons[".env"] == "secret file" and reasons["deploy.pem"] == "secret file"
    assert "config.py" in indexed and "config.py" not in reasons  # the secret is redacted, the code stays findable
    assert reasons["blob.bin"] == "binary" and reasons["latin.py"] == "not UTF-8"
    assert reasons["app.min.js"] == "generated or lock file" and reasons["huge.txt"].startswith("larger than")
    everything = " ".join(r["text"] for r in index.chunks.search().limit(1000).to_list())
    assert "supersecret" not in everything and "AKIAABCDEFGHIJKLMNOP" not in everything
    assert "AWS_KEY = '«redacted aws-key-id»'" in everything


def test_incremental_update_touches_only_changed_files_and_leaves_nothing_stale(polyglot):
    index = Engine(polyglot).code_index(create=True)
    index.update(embed=False)
    assert index.update(embed=False).changed == 0
    (polyglot / "pkg/util.py").write_text("def helper(x):\n    return x * 3\n\ndef shiny_new_function():\n    pass\n")
    os.utime(polyglot / "pkg/models.py")
    report = index.update(embed=False)
    assert report.changed == 1 and report.unchanged == report.listed - 1
    assert any("shiny_new_function" in r["symbols"] for r in chunk_rows(index, "pkg/util.py"))
    git(polyglot, "mv", "pkg/models.py", "pkg/entities.py")
    (polyglot / "web/util.js").unlink()
    report = index.update(embed=False)
    assert report.removed == 2 and report.changed == 1
    for table in (index.files, index.chunks, index.edges):
        for gone in ("pkg/models.py", "web/util.js"):
            assert table.count_rows(f"path = '{gone}'") == 0
    assert file_row(index, "pkg/entities.py") is not None
    assert index.status().fresh


def test_status_follows_what_another_process_indexed_and_lost(polyglot):
    """A served search's freshness look keeps what the index holds per version of its tables: a write by any other
    engine (another process, a compaction) must be seen at the next look, never an answer kept from before."""
    watcher = Engine(polyglot).code_index(create=True)
    watcher.update(embed=False)
    assert watcher.status().fresh
    (polyglot / "pkg/util.py").write_text("def helper(x):\n    return x * 5\n")
    (polyglot / "pkg/extra.py").write_text("def extra():\n    return 0\n")
    before = watcher.status()
    assert (before.stale, before.new) == (1, 1)
    Engine(polyglot).code_index().update(embed=False)  # another writer brings the index up to date
    assert watcher.status().fresh
    # Another writer loses a file's chunks (a crash between writes): the file is stale again, though no stat moved.
    Engine(polyglot).code_index().chunks.delete("path = 'pkg/models.py'")
    after = watcher.status()
    assert after.stale == 1 and after.indexed_files == before.indexed_files


def test_branch_switch_updates_just_the_files_that_differ(polyglot):
    git(polyglot, "checkout", "-q", "-b", "feature")
    commit_file(polyglot, "pkg/feature_only.py", "def feature_flag():\n    return True\n", "Add feature")
    index = Engine(polyglot).code_index(create=True)
    index.update(embed=False)
    git(polyglot, "checkout", "-q", "main")
    status = index.status()
    assert not status.fresh and status.removed == 1
    report = index.update(embed=False)
    assert report.removed == 1 and report.changed == 0
    assert file_row(index, "pkg/feature_only.py") is None


def test_embeddings_are_filled_in_later_and_reused_by_content(repo):
    index = Engine(repo).code_index(create=True)
    report = index.update(embed=False)
    assert report.embeddings_pending > 0 and index.status().embeddings_pending == report.embeddings_pending
    assert index.embed_pending() == report.embeddings_pending
    assert index.status().embeddings_pending == 0
    (repo / "src/app.py").write_text("def main():\n    return 1\n\n")
    (repo / "src/app.py").write_text("def main():\n    return 1\n")
    os.utime(repo / "src/app.py", ns=(1, 1))
    index.update(embed=False)
    assert index.status().embeddings_pending == 0


def test_embedding_takes_again_rows_a_concurrent_reindex_left_unembedded(repo):
    """Another lexical pass (a selection indexing on its own while the dashboard's worker embeds) can rewrite rows
    unembedded right after they were embedded: the queue embeds them again instead of leaving them pending."""
    index = Engine(repo).code_index(create=True)
    index.update(embed=False)
    rewritten = []

    def progress(p):
        if p.phase == "embedding" and p.done and not rewritten:
            rewritten.append(p.done)
            index.db.update(index.chunks, "embedded = true", {"embedded": False})

    index.embed_pending(progress=progress)
    assert rewritten and index.chunks.count_rows("embedded = false") == 0


def test_bad_trees_complete_and_report(tmp_path, empty_repo):
    plain = tmp_path / "plain"
    (plain / "a").mkdir(parents=True)
    (plain / "a" / "code.py").write_text("def f():\n    pass\n")
    (plain / ".gitignore").write_text("ignored.py\n")
    (plain / "ignored.py").write_text("x = 1\n")
    os.symlink(plain, plain / "a" / "loop")
    os.symlink(plain / "missing", plain / "dangling.py")
    unreadable = plain / "secretive.py"
    unreadable.write_text("y = 1\n")
    unreadable.chmod(0)
    (plain / "big.log").write_text("line\n" * 12_000_000)
    index = Engine(plain).code_index(create=True)
    report = index.update(embed=False)
    indexed = {r["path"] for r in index.files.search().limit(100).to_list()}
    assert "a/code.py" in indexed and "ignored.py" not in indexed
    reasons = dict(report.skipped)
    assert reasons["a/loop"] == "symbolic link" and reasons["big.log"].startswith("larger than")
    empty = Engine(empty_repo).code_index(create=True)
    assert empty.update(embed=False).changed == 0


def test_cli_index_status_and_skips(cli, repo):
    (repo / ".env").write_text("X=1\n")
    first = cli.json("index", "--no-embed")
    assert first["changed"] == 2 and first["skipped_counts"] == {"secret file": 1}
    assert cli.json("index", "--status")["fresh"] is True
    (repo / "src/new.py").write_text("def added():\n    return 0\n")
    status = cli.json("index", "--status")
    assert status["fresh"] is False and status["new"] == 1
    assert cli.json("index", "--no-embed")["changed"] == 1


def test_cli_index_status_counts_one_file_as_one(cli, repo):
    git(repo, "rm", "-q", "README.md")
    cli.json("index", "--no-embed")
    code, out, err = cli("index", "--status")
    assert code == 0 and "; 1 file, 1 chunk;" in out, out + err


def test_shallow_clone(repo, tmp_path):
    for i in range(3):
        commit_file(repo, f"m{i}.py", f"v = {i}\n", f"Commit {i}")
    shallow = tmp_path / "shallow"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{repo}", str(shallow)], check=True)
    report = Engine(shallow).code_index(create=True).update(embed=False)
    assert report.changed == 5


@pytest.mark.parametrize("head, generated", [
    ("// Code generated by protoc-gen-go. DO NOT EDIT.\n", True),
    ("# @generated by the build\n", True),
    ("# This file is autogenerated by pip-compile\n", True),
    ("/* Auto-generated file: do not modify */\n", True),
    ("# AUTO-GENERATED from schema.yaml\n", True),
    ("// Generated file. Do not edit.\n", True),
    ("// hasNoneFlag: both not deprecated and not the autogenerated help command.\n", False),
    ("# auto-generated tag files\ntags\n", False),
    ("# Skip auto-generated files when linting\n", False),
    ("// <auto-generated />\n", True),
    ("/* autogenerated */\n", True),
    ('"""This module was generated from api.yaml; do not edit."""\n', True),
    ("The client in api/ is generated from openapi.yaml; do not edit it by hand.\n", False),
    ('"""The code is generated at import time from the table below."""\n', False),
    ("# the file is generated from foo.proto by this script\n", False),
])
def test_only_a_generator_header_marks_a_file_generated(head, generated):
    """Hand-written files that mention generated code stay indexed (a Go file whose comment mentions the
    autogenerated help command, and a .gitignore, were skipped as generated and could not be found)."""
    from cortex_tui.core.index.walk import Listed, vet_source

    data = f"{head}\ndef handwritten():\n    return 1\n".encode()
    source, reason = vet_source(Listed("pkg/util.py", len(data), 0), data)
    assert (reason == "generated") is generated and (source is None) is generated


@pytest.mark.parametrize("others", [0, 12])
def test_files_with_non_ascii_or_quoted_names_get_their_last_commit(repo, others):
    """git quotes such names (`"Z\\303\\274rich.py"`) unless told not to, so they matched no listed path and got no
    commit time or author; a few files are asked for one by one, many in one walk (`others`)."""
    names = ["docs/notes dir/Zürich café ☕.py", 'odd "quoted" name.py']
    for name in names:
        commit_file(repo, name, "def brew():\n    return 1\n", f"Add {name}")
    for n in range(others):
        commit_file(repo, f"more/m{n}.py", f"X = {n}\n", f"Add m{n}")
    index = Engine(repo).code_index(create=True)
    index.update(embed=False)
    for name in names:
        row = file_row(index, name)
        assert row["last_commit_time"] is not None and row["last_author"] == "Test Author", (name, row)


def test_a_pass_that_rewrites_much_of_the_index_leaves_it_searchable_through_the_full_text_index(repo):
    """Rows written after the full-text index was built are scanned by every search until compaction folds them
    in; a pass that rewrote most files (a migration's re-cut, a checkout) compacts at its end."""
    def module(n: int, version: int) -> str:
        return "\n\n".join(f"def step_{n}_{k}(values, limit={version}):\n    \"\"\"Step {k} of stage {n}: filter, "
                           f"scale and clip the values to the limit.\"\"\"\n    kept = [v for v in values if v > {k}]\n"
                           f"    scaled = [v * {version} for v in kept]\n    return [min(v, limit) for v in scaled]\n"
                           for k in range(10)) + "\n"

    write_all(repo, {f"pkg/stage_{n}.py": module(n, 1) for n in range(70)})
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "Stages")
    index = Engine(repo).code_index(create=True)
    index.update(embed=False)
    assert index.chunks.index_stats("words_idx").num_unindexed_rows == 0
    write_all(repo, {f"pkg/stage_{n}.py": module(n, 2) for n in range(70)})
    report = index.update(embed=False)
    stats = index.chunks.index_stats("words_idx")
    assert report.changed == 70 and stats.num_indexed_rows >= 500, (report, stats)
    assert stats.num_unindexed_rows == 0, stats
    # A small edit is left to the background compaction.
    write_all(repo, {"pkg/stage_0.py": module(0, 3)})
    index.update(embed=False)
    assert 0 < index.chunks.index_stats("words_idx").num_unindexed_rows < 500


def test_the_embed_lock_tells_whether_anything_embeds_now(repo):
    """One embedder at a time holds the embed lock; the status reads it to say "continuing" or "paused", and a
    second embedder waits for it (here told to stop waiting) instead of embedding the same chunks."""
    index = Engine(repo).code_index(create=True)
    index.update(embed=False)
    idle = index.status()
    assert idle.embeddings_pending == idle.chunks > 0 and not idle.embedding
    assert idle.embeddings_line() == f"embeddings 0 of {idle.chunks}; paused — run `cortex index` to finish"
    with index.embed_queue.turn(wait=False) as mine:
        assert mine
        held = index.status()
        assert held.embedding and held.embeddings_line() == f"embeddings 0 of {held.chunks}, continuing"
        with index.embed_queue.turn(wait=False) as second:
            assert not second
        waited = []
        assert index.embed_queue.run(progress=waited.append, should_stop=lambda: bool(waited)) == 0
        assert waited[0].phase == "embedding" and (waited[0].done, waited[0].total) == (0, held.chunks)
    assert index.embed_pending() == idle.chunks
    done = index.status()
    assert not done.embedding and done.embeddings_line() == f"all {done.chunks} embedded"


LEXICAL_FILES = {
    "config/shop.yaml": "currency: EUR\ncoupon_limit: 3\n",
    "docs/guide.md": "# Guide\n\nHow to price a cart.\n",
    "lib/vendor/left_pad.py": "def left_pad(text, width):\n    return text.rjust(width)\n",
    "shop/typeshed/stdlib/os.pyi": "def getcwd() -> str: ...\n",
    "shop/pricing.py": "def price_of(sku):\n    return 10\n",
    "tests/test_pricing.py": "def test_price():\n    assert True\n",
}
EMBEDDED_FILES = {"docs/guide.md", "shop/pricing.py"}
EMBEDDED_WHERE = "path IN ('docs/guide.md', 'shop/pricing.py')"


def test_tests_data_and_vendored_code_keep_only_their_lexical_signal(empty_repo):
    """Only code and documentation outside tests and vendored code wait for a vector; tests, vendored code and
    configuration or data files are stored lexical only (nothing pending, never compared by vector), found by their
    words, and the status says how many chunks are lexical only by design."""
    from cortex_tui.core.context.select import load_chunks
    from cortex_tui.core.index.embed_scope import LEXICAL_ONLY

    for path, text in LEXICAL_FILES.items():
        commit_file(empty_repo, path, text, f"Add {path}")
    engine = Engine(empty_repo)
    index = engine.code_index(create=True)
    report = index.update(embed=False)
    embedded = index.chunks.count_rows(EMBEDDED_WHERE)
    others = index.chunks.count_rows() - embedded
    assert embedded >= 2 and others >= 4
    assert report.embeddings_pending == embedded
    assert {r["path"] for r in scan(index.chunks, "embedded = false", ["path"])} == EMBEDDED_FILES
    lexical = scan(index.chunks, f"NOT ({EMBEDDED_WHERE})", ["embedded", "vector_model"])
    assert all(r["embedded"] and r["vector_model"] == LEXICAL_ONLY for r in lexical)
    assert index.embed_pending() == embedded
    done = index.status()
    assert (done.embeddings_pending, done.lexical_only) == (0, others)
    assert done.embeddings_line() == f"all {embedded} embedded ({others} lexical only: tests, data, vendored code)"
    assert "config/shop.yaml" in {h.path for h in engine.search("coupon_limit").hits}
    # Selection compares chunks with the task by their vectors: a lexical-only chunk has none (not a zero one).
    loaded = load_chunks(index.chunks, ["shop/pricing.py", "tests/test_pricing.py"], with_vectors=True)
    assert all(c.vector is not None for c in loaded["shop/pricing.py"])
    assert all(c.vector is None for c in loaded["tests/test_pricing.py"])


def test_a_database_that_embedded_tests_keeps_them_lexical_only_when_opened(empty_repo):
    """A database indexed before the rule (every chunk embedded or waiting) has its tests, data and vendored chunks
    marked lexical only when it is opened, and one marked by another rule has the chunks this one embeds queued; a
    change of model queues again only the chunks the rule embeds."""
    from cortex_tui.core.index.embed_scope import LEXICAL_ONLY
    from cortex_tui.core.index.formats import bring_up_to_date
    from cortex_tui.core.store.indexes import TEXT_INDEX

    for path, text in LEXICAL_FILES.items():
        commit_file(empty_repo, path, text, f"Add {path}")
    index = Engine(empty_repo).code_index(create=True)
    index.update(embed=False)
    index.db.update(index.chunks, f"NOT ({EMBEDDED_WHERE})", {"embedded": False, "vector_model": ""})
    index.db.update(index.chunks, "path = 'docs/guide.md'", {"embedded": True, "vector_model": LEXICAL_ONLY})
    index.db.set_metas({"chunks_scope": "0"})
    reopened = Engine(empty_repo).code_index()
    assert {r["path"] for r in scan(reopened.chunks, "embedded = false", ["path"])} == EMBEDDED_FILES
    # The rewritten rows are folded into the full-text index at once: scanned beside it, their words score apart.
    assert reopened.chunks.index_stats(TEXT_INDEX).num_unindexed_rows == 0
    reopened.embed_pending()
    bring_up_to_date(reopened.db, reopened.chunks, reopened.files, "another model")
    assert {r["path"] for r in scan(reopened.chunks, "embedded = false", ["path"])} == EMBEDDED_FILES
    assert reopened.chunks.count_rows(f"vector_model = '{LEXICAL_ONLY}'") == reopened.chunks.count_rows() - \
        reopened.chunks.count_rows(EMBEDDED_WHERE)


def test_a_long_definition_is_embedded_by_its_first_word_pieces_under_a_key_that_names_the_cut(empty_repo):
    """The model reads a code chunk's first DOCUMENT_TOKENS word pieces (its path, names, signature, docstring and
    opening lines); the rest of a long body is not embedded, and the vector is cached apart from the whole text's."""
    from cortex_tui.core.embedding import MINILM_FILES
    from cortex_tui.core.embedding.embed import DOCUMENT_TOKENS
    from cortex_tui.core.index.chunk_rows import embed_text
    from cortex_tui.core.text import text_hash
    from tokenizers import Tokenizer

    body = "\n".join(f"    total_{i} = compute_tax(amount_{i}, rate_{i})" for i in range(40))
    commit_file(empty_repo, "shop/tax.py", f'def taxes(amounts):\n    """Tax of every amount."""\n{body}\n', "Add taxes")
    index = Engine(empty_repo).code_index(create=True)
    index.update(embed=False)
    index.embed_pending()
    [row] = scan(index.chunks, "path = 'shop/tax.py'", ["path", "symbols", "text", "hash", "vector"])
    whole = embed_text(row["path"], row["symbols"], row["text"])
    tokenizer = Tokenizer.from_file(str(MINILM_FILES / "tokenizer.json"))
    tokenizer.no_truncation()  # the shipped file cuts at 128 and pads: every piece is wanted here
    tokenizer.no_padding()
    pieces = tokenizer.encode(whole, add_special_tokens=False)
    assert len(pieces.ids) > 256  # longer than the model would read anyway
    read = whole[: pieces.offsets[DOCUMENT_TOKENS - 3][1]]
    assert "compute_tax(amount_0" in read and "amount_39" not in read
    assert row["hash"] != text_hash(whole)
    embedder = index.embedder
    assert np.allclose(row["vector"], embedder.embed_uncached([read])[0], atol=1e-6)
    assert float(np.dot(row["vector"], embedder.embed_uncached([whole])[0])) < 0.9999


def test_a_lexical_pass_reads_and_writes_in_batches_bounded_by_bytes_as_well_as_files():
    """500 large files would be one batch holding a quarter of a gigabyte of rows: a batch ends at `WRITE_BYTES` of
    source too, and a file larger than that is a batch of its own."""
    from cortex_tui.core.index.index import WRITE_BATCH, WRITE_BYTES, write_batches
    from cortex_tui.core.index.walk import Listed

    big = [Listed(f"big_{i}.py", WRITE_BYTES // 4, 0) for i in range(10)]
    assert [len(b) for b in write_batches(big)] == [4, 4, 2]
    small = [Listed(f"small_{i}.py", 10, 0) for i in range(WRITE_BATCH + 1)]
    assert [len(b) for b in write_batches(small)] == [WRITE_BATCH, 1]
    huge = [Listed("a.py", 10, 0), Listed("huge.py", WRITE_BYTES * 2, 0), Listed("b.py", 10, 0)]
    assert [[f.path for f in b] for b in write_batches(huge)] == [["a.py"], ["huge.py"], ["b.py"]]


def test_the_vector_index_waits_for_real_vectors_not_the_zero_placeholders(empty_repo, monkeypatch):
    """A lexical pass stores every chunk with a zero vector: waiting for the model, or lexical only for good. The
    vector index was built as soon as the table held `ANN_MIN_ROWS` chunks, so a 50,000-file tree's first lexical
    pass trained it on 243,000 zero vectors (its peak memory, and an index of no use). Only chunks holding the
    model's vector count now: none after the lexical pass, half of them after half the embedding (the lexical-only
    rows beside them made the old count), all of them at the threshold."""
    from cortex_tui.core.store import indexes

    files = {f"shop/part_{i}.py": f"def part_{i}(sku):\n    return {i}\n" for i in range(6)}
    files |= {f"tests/test_part_{i}.py": f"def test_part_{i}():\n    assert {i}\n" for i in range(6)}
    for path, text in files.items():
        (empty_repo / path).parent.mkdir(parents=True, exist_ok=True)
        (empty_repo / path).write_text(text)
    git(empty_repo, "add", ".")
    git(empty_repo, "commit", "-q", "-m", "Add the parts")
    index = Engine(empty_repo).code_index(create=True)

    def vector_indexes() -> list:
        return [i for i in index.chunks.list_indices() if i.columns == ["vector"]]

    monkeypatch.setattr(indexes, "ANN_MIN_ROWS", 1)
    index.update(embed=False)
    waiting = index.pending()
    lexical_only = index.chunks.count_rows() - waiting
    assert waiting >= 6 and lexical_only >= 6 and vector_indexes() == []
    monkeypatch.setattr(indexes, "ANN_MIN_ROWS", waiting)
    assert index.embed_pending(limit=waiting // 2) == waiting // 2
    assert vector_indexes() == []
    assert index.embed_pending() == waiting - waiting // 2
    [built] = vector_indexes()
    assert index.chunks.index_stats(built.name).num_indexed_rows == waiting + lexical_only
