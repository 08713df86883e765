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
