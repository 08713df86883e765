"""Which file a selection puts first, and how much room the others get when it leads: on real repositories, the
real index and real token counts."""

from __future__ import annotations

from cortex_tui.core.context.file_ranking import type_words
from cortex_tui.core.context.items import BELOW_FLOOR

from .conftest import indexed_engine


def _helpers(prefix: str, n: int, words: str, lines: int = 1) -> str:
    """`n` functions of about `lines` lines whose docstrings say `words`."""
    return "".join(f"def {prefix}_{i}(value):\n    \"\"\"{words} ({i}).\"\"\"\n"
                   + "".join(f"    value.append({j} * {i})\n" for j in range(lines)) + "    return value\n\n\n"
                   for i in range(n))


def test_a_capitalised_word_of_the_prose_names_the_class_defined_so():
    task = "Choice lists are shown. Fix the metavar\n    Sort results (Type 'help')\nwhen False"
    # Opening a sentence, in an indented (quoted) line or after a bracket a capital is not a name.
    assert type_words(task) == {"False"}
    assert type_words("Fix metavar for Choice options") == {"Choice"}


def test_the_class_a_capitalised_word_names_ranks_first(repo):
    """The prompts module says "metavar" and "options" in many functions; the kinds module defines the `Choice` the
    task names in prose. Full text ranks the prompts first; the class named so leads."""
    kinds = ("class Choice:\n    \"\"\"One of a fixed set of values.\"\"\"\n\n    def __init__(self, values):\n"
             "        self.values = values\n\n    def label(self):\n        return '|'.join(self.values)\n\n\n"
             + _helpers("kind", 6, "Convert a raw value"))
    prompts = _helpers("prompt", 8, "Show the metavar of the options, the choice the user has")
    engine = indexed_engine(repo, {"params/kinds.py": kinds, "ui/prompts.py": prompts})
    ranked = engine.select("Fix metavar for Choice options when hidden", 4000).ranked_files
    assert ranked[0] == "params/kinds.py", ranked


def test_a_file_that_leads_by_far_leaves_out_what_trails_it(repo):
    """The invoice module says the task's words in every function, the ledger in one, the audit module in one of
    many: with the invoice module far ahead, the audit module trails below the lead's floor and stays out though
    the budget has room, said to be below the floor."""
    engine = indexed_engine(repo, {
        "billing/invoice.py": _helpers("invoice", 6, "Rounding of invoice totals", 25),
        "billing/ledger.py": _helpers("ledger", 1, "Rounding of the ledger", 25) + _helpers("entry", 6, "Post", 25),
        "billing/audit.py": _helpers("audit", 1, "Invoice", 25) + _helpers("check", 8, "Check an entry", 25),
    })
    selection = engine.select("Fix rounding of invoice totals", 12000)
    ranked = selection.ranked_files
    assert ranked[0] == "billing/invoice.py", ranked
    chosen = [i.path for i in selection.chosen]
    assert "billing/audit.py" not in chosen, chosen
    reasons = {i.path: i.reason for i in selection.left_out}
    assert reasons.get("billing/audit.py") == BELOW_FLOOR, reasons
