"""State that belongs to one engine stays there: a served process runs many engines on many threads, so nothing an
engine does may change the process's environment or count into a module-wide global."""

import os

from cortex_tui.core.embedding.embed import DEFAULT_MODEL, Embedder, _default_model_dir
from cortex_tui.core.engine import Engine


def test_a_model_directory_loads_offline_without_touching_the_process_environment(monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    # The shipped MiniLM files as a directory of the user's own: loaded through fastembed, told to stay offline.
    embedder = Embedder(DEFAULT_MODEL, model_path=str(_default_model_dir()))
    assert embedder.embed_uncached(["prices include tax"]).shape == (1, 384)
    assert "HF_HUB_OFFLINE" not in os.environ


def test_whole_tree_listings_are_counted_by_the_index_that_made_them(repo, tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "notes.py").write_text("X = 1\n")
    index, other = Engine(repo).code_index(create=True), Engine(plain).code_index(create=True)
    assert (index.full_listings, other.full_listings) == (0, 0)
    index.update(embed=False)
    index.status()  # no watcher keeps it live: the tree is listed to compare
    assert index.full_listings == 2 and other.full_listings == 0
    index.refresh(["src/app.py"])  # a few paths: asked of git by name, not a listing of the tree
    assert index.full_listings == 2
