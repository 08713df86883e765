"""Time words in queries, read against fixed reference dates, and the date boost on a real store."""

from datetime import UTC, datetime

import pytest
from cortex_tui.core.engine import Engine
from cortex_tui.core.records import MemoryDraft
from cortex_tui.core.search.dates import parse_dates

REF = datetime(2023, 8, 20, 15, 30, tzinfo=UTC)  # a Sunday


def day(y, m, d):
    return datetime(y, m, d, tzinfo=UTC)


@pytest.mark.parametrize(
    "query, start, end",
    [
        ("what did we decide yesterday", day(2023, 8, 19), day(2023, 8, 20)),
        ("notes from today", day(2023, 8, 20), day(2023, 8, 21)),
        ("what happened last week", day(2023, 8, 7), day(2023, 8, 14)),
        ("the bug this week", day(2023, 8, 14), day(2023, 8, 21)),
        ("last weekend plans", day(2023, 8, 12), day(2023, 8, 14)),
        ("last month's release", day(2023, 7, 1), day(2023, 8, 1)),
        ("what did we ship in May", day(2023, 5, 1), day(2023, 6, 1)),
        ("camping in December", day(2022, 12, 1), day(2023, 1, 1)),  # December not yet come: the last one
        ("what did John host in May 2023", day(2023, 5, 1), day(2023, 6, 1)),
        ("on May 7", day(2023, 5, 7), day(2023, 5, 8)),
        ("on 7 May 2023", day(2023, 5, 7), day(2023, 5, 8)),
        ("painting shown on October 13, 2022?", day(2022, 10, 13), day(2022, 10, 14)),
        ("2023-05-07 standup", day(2023, 5, 7), day(2023, 5, 8)),
        ("everything from 2022", day(2022, 1, 1), day(2023, 1, 1)),
        ("last year", day(2022, 1, 1), day(2023, 1, 1)),
        ("two weeks ago", day(2023, 8, 3), day(2023, 8, 10)),
        ("last monday", day(2023, 8, 14), day(2023, 8, 15)),
    ],
)
def test_time_words_become_windows(query, start, end):
    window = parse_dates(query, REF).window
    assert window is not None, query
    assert (window.start, window.end) == (start, end)


@pytest.mark.parametrize(
    "query, start, end",
    [
        ("what changed before May 2023", None, day(2023, 5, 1)),
        ("what did Maria do before April 10, 2023?", None, day(2023, 4, 10)),
        ("everything since June 3", day(2023, 6, 4), None),
        ("after 2022", day(2023, 1, 1), None),
    ],
)
def test_before_and_after_a_date_open_one_side(query, start, end):
    window = parse_dates(query, REF).window
    assert (window.start, window.end) == (start, end)


def test_before_an_event_is_an_anchor_to_look_up():
    asked = parse_dates("what did Melanie do before the trip?", REF)
    assert asked.window is None
    assert (asked.anchor.direction, asked.anchor.event) == ("before", "the trip")


@pytest.mark.parametrize("query", ["you may want to retry", "parse config", "port 80 timeout", "31st of nothing",
                                   "[bold]May[/] markup", "2023-13-45 is not a day"])
def test_words_that_are_not_times_give_no_window(query):
    asked = parse_dates(query, REF)
    assert asked.window is None


def test_impossible_day_falls_back_to_its_month():
    window = parse_dates("what about 31 feb 2023", REF).window
    assert (window.start, window.end) == (day(2023, 2, 1), day(2023, 3, 1))


def test_a_window_lifts_the_memory_made_inside_it(repo):
    engine = Engine(repo)
    may = engine.remember(MemoryDraft(text="We moved the nightly backup job to the new cluster.",
                                      created_at=datetime(2023, 5, 12, tzinfo=UTC))).memory
    june = engine.remember(MemoryDraft(text="We moved the nightly backup job to the old cluster.",
                                       created_at=datetime(2023, 6, 12, tzinfo=UTC))).memory
    searcher = engine.searcher()
    in_may = searcher.search("where did the nightly backup job move in May 2023", now=REF)
    in_june = searcher.search("where did the nightly backup job move in June 2023", now=REF)
    assert [h.id for h in in_may.hits][:2] == [may.id, june.id]
    assert [h.id for h in in_june.hits][:2] == [june.id, may.id]
    assert "date" in in_may.hits[0].score.boosts and "date" not in in_may.hits[1].score.boosts
    assert any("2023-05-01 to 2023-05-31" in note for note in in_may.notes)


def test_after_an_event_dates_it_by_the_memory_that_says_it(repo):
    engine = Engine(repo)
    engine.remember_many([
        MemoryDraft(text="Melanie had a car accident on the highway.", created_at=day(2023, 6, 1)),
        MemoryDraft(text="Melanie felt grateful for her family.", created_at=day(2023, 3, 1)),
        MemoryDraft(text="Melanie felt grateful for her family and her kids.", created_at=day(2023, 7, 1)),
    ])
    hits = engine.searcher().search("How did Melanie feel after the accident?", now=REF).hits
    after = next(h for h in hits if "kids" in h.text)
    before = next(h for h in hits if h.text.endswith("her family."))
    assert "date" in after.score.boosts and "date" not in before.score.boosts


def test_cli_shows_each_memory_date(repo, capsys):
    from .conftest import Cli

    engine = Engine(repo)
    engine.remember(MemoryDraft(text="Rotate the signing keys quarterly.", created_at=day(2023, 5, 7)))
    code, out, _ = Cli(repo)("search", "signing keys")
    assert code == 0 and "2023-05-07" in out
