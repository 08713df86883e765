"""The order a selection buys regions in, and the floor that says whether a region is worth its tokens at all, are
two things: a weakly evidenced file's first region waits behind better evidenced regions, and still goes in when the
budget has room (`fitting.plan`, real units and limits)."""

from __future__ import annotations

from cortex_tui.core.context.fitting import Limits, Unit, plan
from cortex_tui.core.keys import Key

STOP = 1e-3


def _unit(name: str, path: str, gain: float, cost: int, boost: float = 1.0) -> Unit:
    return Unit(Key("chunk", name), path, gain, cost, floor_boost=boost)


def test_a_weakly_evidenced_region_waits_for_better_ones_yet_goes_in_when_there_is_room():
    lead = _unit("lead", "a.py", 1.0, 100)
    deeper = _unit("deeper", "a.py", 0.3, 100)
    # Ordered by 0.05 / 100 (below the floor STOP alone), judged worth it by its whole 0.5 / 100.
    weak = _unit("weak", "b.py", 0.05, 100, boost=10.0)
    limits = Limits(gain_per_token=STOP)
    tight = plan([lead, deeper, weak], [lead], 200, limits)
    assert [u.key.id for u in tight] == ["lead", "deeper"]
    roomy = plan([lead, deeper, weak], [lead], 1000, limits)
    assert [u.key.id for u in roomy] == ["lead", "deeper", "weak"]
    assert limits.worth(weak) and not limits.worth(_unit("weak", "b.py", 0.05, 100))
