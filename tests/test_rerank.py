"""The lexical-coverage reranker: what it measures, and that it reorders real matches without losing any."""

from cortex_tui.core.config import SearchWeights
from cortex_tui.core.engine import Engine
from cortex_tui.core.records import MemoryDraft
from cortex_tui.core.search.rerank import coverage, words


def test_coverage_weights_the_word_that_tells_candidates_apart():
    texts = ["Caroline: I went to a support group yesterday.", "Caroline: the weather was nice.",
             "Caroline: my support group met again.", "Melanie: I love painting."]
    shares = coverage(("caroline", "support", "group", "yesterday"), texts)
    assert shares[0] == max(shares) == 1.0
    assert shares[1] < shares[2] < shares[0]
    assert shares[3] == 0.0


def test_words_are_stemmed_and_identifiers_split():
    assert {"paint", "parse", "config", "parseconfig"} <= words("painting parseConfig")
    assert coverage(("painted",), ["She paints every day", "nothing here"]) == [1.0, 0.0]


def test_hostile_text_is_just_text():
    texts = ["[bold]x[/] " * 10_000, "\udcff\x00 broken bytes", "", "a" * 1_000_000]
    assert len(coverage(("bold", "broken"), texts)) == 4
    assert coverage((), texts) == [0.0] * 4


def test_reranker_lifts_the_memory_that_says_the_whole_query(repo):
    engine = Engine(repo)
    engine.remember_many([MemoryDraft(text=t) for t in ("Caroline likes tea.", "Melanie went on a group hike.")])
    # The neighbour context of `other` holds every query word, so full text ranks it first; only `own` says them itself.
    own = engine.remember(MemoryDraft(text="Caroline went to the LGBTQ support group yesterday.")).memory
    other = engine.remember(MemoryDraft(text="That sounds lovely, tell me more!",
                                        context="LGBTQ support group " * 4 + "Caroline yesterday")).memory
    searcher = engine.searcher()
    query = "When did Caroline go to the LGBTQ support group?"
    plain = [h.id for h in searcher.search(query, signals=("text",), boost=False).hits]
    reranked = searcher.search(query, signals=("text",)).hits
    assert plain[0] == other.id
    assert reranked[0].id == own.id
    demoted = next(h for h in reranked if h.id == other.id)
    assert demoted.score.boosts["rerank"] < reranked[0].score.boosts.get("rerank", 0.0) <= 0
    assert "rerank" in demoted.score.explain()


def test_reranker_off_keeps_the_fused_order(repo):
    engine = Engine(repo)
    engine.remember(MemoryDraft(text="Caroline went to the LGBTQ support group yesterday."))
    engine.remember(MemoryDraft(text="That sounds lovely!", context="Caroline LGBTQ support group support group"))
    searcher = engine.searcher()
    searcher.weights = SearchWeights(rerank=0.0)
    query = "When did Caroline go to the LGBTQ support group?"
    assert [h.id for h in searcher.search(query).hits] == [h.id for h in searcher.search(query, boost=False).hits]


def test_a_reply_is_lifted_by_the_candidate_its_context_quotes(repo):
    engine = Engine(repo)
    question = "John: What do you have in this dinner spread with your mom? Looks delicious!"
    engine.remember_many([MemoryDraft(text=t) for t in (
        "Maria: dinner with the shelter volunteers was quiet tonight.",
        "John: my mom cooked dinner for the whole boot camp.",
        "Maria: Thanks John, spreading kindness is my thing.",
    )])
    engine.remember(MemoryDraft(text=question, context="Maria: My mom and I made some dinner together last night!"))
    reply = engine.remember(MemoryDraft(text="Maria: Salads, sandwiches and homemade desserts.",
                                        context=f"{question}\nJohn: Yum, I love salads.")).memory
    searcher = engine.searcher()
    query = "What food was on Maria's dinner spread with her mom?"
    plain = [h.id for h in searcher.search(query).hits]
    searcher.weights = SearchWeights(neighbour=0.0)
    unlifted = searcher.search(query).hits
    searcher.weights = SearchWeights()
    lifted = searcher.search(query).hits
    assert plain == [h.id for h in lifted]
    assert [h.id for h in lifted].index(reply.id) < [h.id for h in unlifted].index(reply.id)
    boosted = next(h for h in lifted if h.id == reply.id)
    assert boosted.score.boosts["neighbour"] > 0 and "neighbour" in boosted.score.explain()
    # Memories whose context quotes no other candidate gain nothing.
    assert all("neighbour" not in h.score.boosts for h in lifted if h.id != reply.id)
