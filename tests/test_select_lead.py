"""Which file a selection puts first, and how much room the others get when it leads: on real repositories, the
real index and real token counts."""

from __future__ import annotations

from cortex_tui.core.context.file_ranking import type_words

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


def test_a_file_that_leads_by_far_is_read_first_and_what_trails_it_gets_only_the_spare_room(repo):
    """The invoice module says the task's words in every function, the ledger in one, the audit module in one of
    many: the invoice module leads by far and the lead's floor holds the others back. A budget the invoice module
    fills holds it alone; a budget it leaves far from spent gives the rest to the held-back files the task's words
    point to, each saying it came in on the spare room (on fresh repositories the floors alone ended contexts at
    two thirds of the budget and left out edited files)."""
    engine = indexed_engine(repo, {
        "billing/invoice.py": _helpers("invoice", 6, "Rounding of invoice totals", 25),
        "billing/ledger.py": _helpers("ledger", 1, "Rounding of the ledger", 25) + _helpers("entry", 6, "Post", 25),
        "billing/audit.py": _helpers("audit", 1, "Invoice", 25) + _helpers("check", 8, "Check an entry", 25),
    })
    task = "Fix rounding of invoice totals"
    tight = engine.select(task, 1500)
    assert tight.ranked_files[0] == "billing/invoice.py", tight.ranked_files
    assert [i.path for i in tight.chosen] == ["billing/invoice.py"], [i.path for i in tight.chosen]
    roomy = engine.select(task, 12000)
    chosen = {i.path: i for i in roomy.chosen}
    assert roomy.chosen[0].path == "billing/invoice.py", list(chosen)
    assert chosen["billing/invoice.py"].kind == "file" and "spare_room" not in chosen["billing/invoice.py"].signals
    assert "billing/audit.py" in chosen and chosen["billing/audit.py"].signals.get("spare_room") == 1.0, list(chosen)
    assert "billing/ledger.py" in chosen and chosen["billing/ledger.py"].signals.get("spare_room") == 1.0
