"""How a person shapes a selection, through the resident server as `cortex` and MCP reach it: near-duplicates give
way to new material, tests only when asked, a score floor that nothing reaches, file limits, and the purpose the
context is laid out for."""

import json

from .conftest import commit_file
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
    text = (_steps("helper", 25) + FORMAT_LINES.format(name="format_invoice_lines") + "\n\n" + _steps("other", 25)
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
