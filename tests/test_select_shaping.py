"""How a person shapes a selection, through the resident server as `cortex` and MCP reach it: near-duplicates give
way to new material, tests only when asked, a score floor that nothing reaches, file limits, and the purpose the
context is laid out for."""

import json
import re

from cortex_tui.app.tui.messages import SelectionMade
from cortex_tui.app.tui.showcase import RecordingApp, settle
from cortex_tui.core.engine import Engine
from cortex_tui.core.records import MemoryDraft
from cortex_tui.widgets.budget_pane import BudgetPane

from .conftest import bridge_for, commit_file
from .test_mcp import call, error, server

INVOICE_TASK = "invoice line amounts are rounded wrong when formatting an invoice in a currency, and invoice tax too"
FORMAT_LINES = '''def {name}(invoice, currency, locale):
    """Format each line of an invoice in the customer's currency and locale."""
    lines = []
    for entry in invoice.entries:
        amount = round_half_even(entry.quantity * entry.unit_price, currency.decimals)
        label = translate_label(entry.description, locale)
        discount = entry.discount_percent / 100 * amount
        lines.append(f"{{label}}: {{currency.symbol}}{{amount - discount:.2f}}")
    subtotal = sum(parse_amount(line) for line in lines)
    return lines, subtotal
'''
TAX = '''def compute_invoice_tax(invoice, region):
    """Tax owed on an invoice for the region's rate, rounded per line as the tax office requires."""
    rate = TAX_RATES.get(region.code, DEFAULT_RATE)
    owed = 0
    for entry in invoice.entries:
        owed += round(entry.quantity * entry.unit_price * rate, 2)
    return owed
'''


def _steps(prefix: str, n: int) -> str:
    return "".join(f'''def {prefix}_{i}(value, scale):
    """Step {i} of the {prefix} pipeline."""
    first = value * {i}
    second = first + scale
    third = second - {i}
    fourth = third * scale
    fifth = fourth / ({i} + 1)
    sixth = fifth + first
    return sixth


''' for i in range(n))


def _shown(selection: dict) -> str:
    return " ".join(item["provenance"] for item in selection["chosen"])


def test_a_near_duplicate_gives_way_to_a_region_not_yet_said(cli, repo):
    """A long file holds a function, a near-copy of it further down and the tax function the task also names: with
    room for about three regions, the copy (which says nothing new) is left for the tax function."""
    text = (_steps("prepare", 25) + FORMAT_LINES.format(name="format_invoice_lines") + "\n\n" + _steps("other", 25)
            + FORMAT_LINES.format(name="format_invoice_lines_v1") + "\n\n" + TAX)
    commit_file(repo, "billing/invoice.py", text, "Add invoices")
    lines = text.splitlines()
    original = lines.index("def format_invoice_lines(invoice, currency, locale):") + 1
    copy = lines.index("def format_invoice_lines_v1(invoice, currency, locale):") + 1
    tax = lines.index("def compute_invoice_tax(invoice, region):") + 1
    selection = cli.json("select", INVOICE_TASK, "--budget", "500")
    assert selection["tokens"] <= 500
    (item,) = selection["chosen"]
    ranges = [tuple(map(int, span.split("-"))) for span in item["provenance"].split(":", 1)[1].split(",")]
    assert any(a <= original <= b for a, b in ranges) and any(a <= tax <= b for a, b in ranges), ranges
    assert not any(a <= copy <= b for a, b in ranges), f"the near-copy went in: {ranges}"


def test_in_auto_tests_enter_only_when_the_task_asks_for_them(cli, repo):
    commit_file(repo, "net/retry.py", "def retry_counter(attempts):\n    return attempts + 1\n", "Add retries")
    commit_file(repo, "tests/test_retry.py", "from net.retry import retry_counter\n\n\ndef test_retry_counter():\n"
                "    assert retry_counter(1) == 2\n", "Test retries")
    for words, asks in (("the retry counter is off by one", False), ("raise coverage of the retry counter", True),
                        ("mock the clock in the retry counter", True), ("stub the sleep of the retry counter", True),
                        ("retry_counter fails in tests/test_retry.py", True)):
        files = [i["path"] for i in cli.json("select", words, "--budget", "4000")["chosen"]]
        assert "net/retry.py" in files
        assert ("tests/test_retry.py" in files) is asks, (words, files)


def test_a_floor_nothing_reaches_falls_back_to_the_top_files_with_a_warning(cli, repo):
    commit_file(repo, "shop/pricing.py", "TAX = 0.2\n\ndef price_of(sku):\n    return 10 * (1 + TAX)\n", "Add pricing")
    commit_file(repo, "shop/cart.py", "from .pricing import price_of\n\ndef cart_total(items):\n"
                "    return sum(price_of(i) for i in items)\n", "Add cart")
    selection = cli.json("select", "tax in price_of", "--min-score", "0.99")
    assert "shop/pricing.py" in [i["path"] for i in selection["chosen"]]
    notes = " ".join(selection["notes"])
    assert "nothing reaches the minimum score 0.99" in notes and "top" in notes and "nothing indexed" not in notes
    code, out, _ = cli("select", "tax in price_of", "--min-score", "0.99", "--max-files", "1")
    assert code == 0 and "minimum score 0.99" in out
    assert "left out for budget" not in out and "under --min-score 0.99: " in out, out


def test_max_files_counts_files_and_leaves_memories_in(cli, repo):
    for name in ("alpha", "beta", "gamma"):
        commit_file(repo, f"ledger/{name}.py", f"def ledger_{name}(entry):\n    return entry.balance\n", f"Add {name}")
    assert cli("remember", "The ledger balance is kept in cents.", "--kind", "decision")[0] == 0
    selection = cli.json("select", "ledger balance entry", "--max-files", "1")
    kinds = [i["kind"] for i in selection["chosen"]]
    assert kinds.count("memory") == 1 and len(kinds) == 2, kinds


async def test_mcp_select_context_takes_min_score_max_files_and_the_repository(repo, tmp_path):
    commit_file(repo, "shop/pricing.py", "TAX = 0.2\n\ndef price_of(sku):\n    return 10 * (1 + TAX)\n", "Add pricing")
    commit_file(repo, "shop/cart.py", "from .pricing import price_of\n\ndef cart_total(items):\n"
                "    return sum(price_of(i) for i in items)\n", "Add cart")
    async with server(repo, "--no-watch") as client:
        floor = await call(client, "select_context", task="tax in price_of", min_score=0.99, repo=str(repo))
        assert floor["items"] and "minimum score 0.99" in " ".join(floor["notes"])
        one = await call(client, "select_context", task="tax in price_of cart_total", max_files=1, repo=".")
        assert len({i["path"] for i in one["items"]}) == 1
        other = tmp_path / "other"
        other.mkdir()
        message = await error(client, "select_context", task="tax", repo=str(other))
        assert "not the repository this server serves" in message and json.dumps(str(other))[1:-1] in message


def _shop_with_memories(repo) -> None:
    commit_file(repo, "shop/pricing.py", "TAX = 0.2\n\ndef price_of(sku):\n    return 10 * (1 + TAX)\n", "Add pricing")
    commit_file(repo, "docs/pricing.md", "# Pricing\n\nThe tax in price_of is included once.\n", "Document pricing")
    engine = Engine(repo)
    for text, kind in (("Prices include tax; never add the tax twice in price_of.", "decision"),
                       ("The tax rate is fixed by law at 20% for price_of.", "fact"),
                       ("Move the tax of price_of into a table.", "task"),
                       ("https://example.com/vat explains the tax in price_of", "link")):
        engine.remember(MemoryDraft(text=text, kind=kind, files=("shop/pricing.py",)))


def _order(text: str, *marks: str) -> list[int]:
    return [text.index(mark) for mark in marks]


def test_purpose_lays_the_context_out_for_its_reader_within_the_budget(cli, repo):
    _shop_with_memories(repo)
    task = "the tax in price_of and its docs"
    general = cli.json("context", task, "--budget", "3000")["text"]
    assert general.index("## Memory") < general.index("## shop/pricing.py") and "# Code" not in general
    assistant = cli.json("context", task, "--budget", "3000", "--purpose", "assistant")
    assert assistant["purpose"] == "assistant" and assistant["tokens"] <= 3000
    text = assistant["text"]
    assert sorted(_order(text, "# Code", "## shop/pricing.py", "# Notes and decisions")) == _order(
        text, "# Code", "## shop/pricing.py", "# Notes and decisions")
    text = cli.json("context", task, "--purpose", "planner")["text"]
    marks = ("# Decisions", "never add the tax twice", "# Constraints and facts", "fixed by law", "# Open tasks",
             "# Code")
    assert _order(text, *marks) == sorted(_order(text, *marks)), text
    text = cli.json("context", task, "--purpose", "research")["text"]
    sources = text.split("# Material", 1)[0]
    assert "[1] memory" in sources and "link" in sources.splitlines()[4], sources
    assert "shop/pricing.py lines 1-4 at commit" in sources and "## [1] Memory" in text
    text = cli.json("context", task, "--purpose", "drafting")["text"]
    assert _order(text, "# Notes and decisions", "# Documentation", "## docs/pricing.md", "# Code") == sorted(
        _order(text, "# Notes and decisions", "# Documentation", "## docs/pricing.md", "# Code"))
    # Research's numbered sources in every format: the list the items' numbers cite.
    xml = cli.json("context", task, "--budget", "3000", "--purpose", "research", "--format", "xml")["text"]
    assert '<sources>\n<source n="1">memory ' in xml and '<memory n="1" ' in xml
    assert re.search(r'<source n="\d+">shop/pricing.py lines 1-4 at commit \w+</source>', xml), xml
    document = json.loads(cli.json("context", task, "--budget", "3000", "--purpose", "research", "--format",
                                   "json")["text"])
    assert [s["n"] for s in document["sources"]] == [i["source"] for i in document["items"]]
    assert any(s["source"].startswith("shop/pricing.py lines 1-4") for s in document["sources"])
    for fmt, mark in (("xml", '<section name="Decisions">'), ("json", '"section": "Decisions"')):
        shaped = cli.json("context", task, "--budget", "3000", "--purpose", "planner", "--format", fmt)
        assert mark in shaped["text"] and shaped["tokens"] <= 3000
    code, _, err = cli("context", task, "--purpose", "poet")
    assert code != 0 and "invalid choice" in err


async def test_mcp_select_context_takes_a_purpose(repo):
    _shop_with_memories(repo)
    async with server(repo, "--no-watch") as client:
        shaped = await call(client, "select_context", task="the tax in price_of", purpose="planner", budget=3000)
        assert shaped["purpose"] == "planner" and shaped["tokens"] <= 3000
        assert shaped["context"].index("# Decisions") < shaped["context"].index("# Code")
        assert "purpose" in await error(client, "select_context", task="tax", purpose="poet")


async def test_s_in_the_dashboard_switches_the_purpose_and_pane_5_says_which(repo):
    _shop_with_memories(repo)
    app = RecordingApp(bridge_for(repo), task="the tax in price_of", remember_theme=False)
    async with app.run_test(size=(160, 45), message_hook=app.record) as pilot:
        await settle(pilot, SelectionMade)
        budget = app.screen.query_one(BudgetPane)
        assert "for general" in str(budget.border_title)
        app.messages.clear()
        await pilot.press("s")
        await settle(pilot, SelectionMade)
        assert "for assistant" in str(budget.border_title)
        text = app.screen.assembled.text
        assert text.index("# Code") < text.index("# Notes and decisions")
        assert budget.shown_tokens == app.screen.assembled.tokens <= budget.view.selection.budget
