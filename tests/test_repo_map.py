"""`cortex map` and `cortex snapshot` on real git repositories, through the resident server (the `cli` fixture's
default), as users and agents run them."""

from __future__ import annotations

import pytest
from cortex_tui.core.tokens import count_tokens

from .conftest import commit_file, git

PRICING = '''TAX = 0.2


def price_of(sku):
    """The price of one item, tax included."""
    return BASE[sku] * (1 + TAX)


def shipping_fee(weight_grams,
                 express=False):
    return round(weight_grams / 1000 * (9 if express else 4), 2)
'''
CART = '''from .pricing import price_of, shipping_fee


class Cart:
    def __init__(self):
        self.items = []

    def total(self):
        return sum(price_of(i) for i in self.items) + shipping_fee(len(self.items) * 300)
'''
CHECKOUT = "from .pricing import price_of\n\n\ndef checkout(cart):\n    return [price_of(i) for i in cart.items]\n"
REPORT = "from .pricing import price_of\n\n\ndef monthly_report(sales):\n    return sum(price_of(s) for s in sales)\n"
UTIL = "def slugify_title(text):\n    return text.lower().replace(' ', '-')\n"


@pytest.fixture
def shop(repo):
    for path, text in (("shop/pricing.py", PRICING), ("shop/cart.py", CART), ("shop/checkout.py", CHECKOUT),
                       ("shop/report.py", REPORT), ("shop/util.py", UTIL)):
        commit_file(repo, path, text, f"Add {path}")
    return repo


def _line_of(repo, path: str, text: str) -> int:
    return next(n for n, line in enumerate((repo / path).read_text().splitlines(), 1) if text in line)


def test_the_map_ranks_the_most_used_definition_first_with_its_signature_and_line(shop, cli):
    found = cli.json("map", "--budget", "300")
    first = found["entries"][0]
    assert (first["path"], first["name"]) == ("shop/pricing.py", "price_of")
    assert first["line"] == _line_of(shop, "shop/pricing.py", "def price_of")
    assert first["signature"] == "def price_of(sku):"
    fee = next(e for e in found["entries"] if e["name"] == "shipping_fee")
    assert fee["signature"] == "def shipping_fee(weight_grams, express=False):"  # a signature over two lines
    assert found["tokens"] == count_tokens(found["text"]) <= 300
    assert f"shop/pricing.py:\n  {first['line']}: def price_of(sku):\n" in found["text"]
    code, text, _ = cli("map", "--budget", "300")
    assert code == 0 and text == found["text"]


def test_a_method_is_shown_under_its_class_and_a_closure_is_not(shop, cli):
    """`def total(self):` alone does not say whose it is: the class's line comes first, the method indented under
    it. A function's inner function is not a member worth the line."""
    commit_file(shop, "shop/labels.py", "def make_label(tag):\n    def render(text):\n        return tag + text\n"
                "    return render\n\n\ndef use(cart):\n    return make_label('x')(cart.total())\n", "Add labels")
    found = cli.json("map", "--budget", "2000")
    total = next(e for e in found["entries"] if e["name"] == "Cart.total")
    assert total["within"] == [_line_of(shop, "shop/cart.py", "class Cart"), "class Cart:"]
    cart_class, cart_total = _line_of(shop, "shop/cart.py", "class Cart"), _line_of(shop, "shop/cart.py", "def total")
    assert f"\n  {cart_class}: class Cart:\n" in found["text"]
    assert f"\n    {cart_total}: def total(self):\n" in found["text"]
    inner = [e for e in found["entries"] if e["name"] == "make_label.render"]
    assert all(e["within"] is None for e in inner) and "\n    2: def render" not in found["text"]
    assert found["tokens"] == count_tokens(found["text"]) <= 2000


@pytest.mark.parametrize("budget", [12, 40, 75])
def test_the_map_fits_every_budget_exactly(shop, cli, budget):
    found = cli.json("map", "--budget", str(budget))
    assert found["tokens"] == count_tokens(found["text"]) <= budget
    bigger = cli.json("map", "--budget", str(budget + 60))
    assert len(bigger["entries"]) > len(found["entries"]), "a larger budget shows more"


def test_a_budget_too_small_for_one_definition_says_so_and_a_bad_budget_is_refused(shop, cli):
    found = cli.json("map", "--budget", "3")
    assert found["entries"] == [] and found["text"] == "" and "nothing fits" in found["notes"][0]
    code, _, err = cli("map", "--budget", "0")
    assert code == 2 and err.count("\n") == 1


def test_the_focus_is_a_path_or_words_and_without_one_the_working_change(shop, cli):
    by_path = cli.json("map", "--budget", "60", "--focus", "shop/util.py")
    assert by_path["seeds"] == ["shop/util.py"] and "shop/util.py" in by_path["files"]
    by_words = cli.json("map", "--budget", "60", "--focus", "titles", "need", "a", "better", "slug")
    assert "shop/util.py" in by_words["files"]
    unfocused = cli.json("map", "--budget", "60")
    assert "shop/util.py" not in unfocused["files"], "the least used definition is left out of a small map"
    (shop / "shop" / "util.py").write_text(UTIL + "\n\ndef slug_length(text):\n    return len(slugify_title(text))\n")
    changed = cli.json("map", "--budget", "60")
    assert changed["seeds"] == ["shop/util.py"] and "shop/util.py" in changed["files"]


def test_the_map_follows_the_index(shop, cli):
    assert "apply_coupon" not in cli("map", "--budget", "500")[1]
    commit_file(shop, "shop/coupons.py", "from .pricing import price_of\n\n\ndef apply_coupon(sku, code):\n"
                "    return price_of(sku) * 0.9\n", "Add coupons")
    assert cli("index")[0] == 0
    assert "def apply_coupon(sku, code):" in cli("map", "--budget", "500")[1]


def test_the_snapshot_is_small_deterministic_and_holds_what_an_agent_needs_first(shop, cli):
    cli("remember", "Round the shipping fee to whole cents", "--kind", "task")
    cli("remember", "Slugs are [bold]lower case[/] with dashes", "--kind", "decision", "--files", "shop/util.py")
    cli("remember", "Checkout never retries payments", "--kind", "decision", "--files", "shop/checkout.py")
    cli("agent", "init", "Ship the shop")
    cli("agent", "log", "--action", "wrote the slug helper")
    cli("agent", "commit", "Slug helper done")
    git(shop, "checkout", "-q", "-b", "slugs")
    (shop / "shop" / "util.py").write_text(UTIL + "\n\ndef slug_length(text):\n    return len(slugify_title(text))\n")

    first = cli.json("snapshot")
    again = cli.json("snapshot")
    assert first == again
    text = first["text"]
    assert first["tokens"] == count_tokens(text) <= 1000
    assert text.startswith(f"# Snapshot: branch slugs at {git(shop, 'rev-parse', 'HEAD')[:10]}\n")
    assert "Working change (1): M shop/util.py" in text
    assert "Round the shipping fee to whole cents" in text
    assert "Slugs are [bold]lower case[/] with dashes (shop/util.py)" in text, "markup is shown as written"
    slugs = next(line for line in text.splitlines() if "Slugs are" in line)
    assert "; code changed since: " in slugs and "shop/util.py" in slugs.split("code changed since: ")[1], slugs
    assert "Checkout never retries" not in text, "decisions about unchanged code stay out"
    assert "Slug helper done" in text.split("Last agent commit:")[1].splitlines()[0]
    assert "Repo map" in text and "def slugify_title(text):" in text
    assert first["map_files"][0] == "shop/util.py"
    code, plain, _ = cli("snapshot")
    assert code == 0 and plain == text


def test_a_repository_whose_files_use_no_other_files_names_still_ranks():
    """No edges at all (every file stands alone): the ranks are the files' own, the seed's first, mentioned or not
    (numpy's bincount answers integers for no entries, which the mentioned names' weighting once failed on)."""
    import pyarrow as pa
    from cortex_tui.core.context.repo_map import SymbolGraph

    graph = SymbolGraph.build(pa.Table.from_pylist([
        {"path": "a.py", "symbols": ["alpha"], "refs": [], "is_test": False},
        {"path": "b.py", "symbols": ["beta", "Beta.size"], "refs": ["alpha_not_defined"], "is_test": False}]))
    for mentioned in ([], ["beta"]):
        found = graph.rank({"a.py": 1.0}, mentioned)
        assert len(found.file) == 3 and found.score.dtype.kind == "f"
        assert (graph.paths[found.file[0]], graph.names[found.name[0]]) == ("a.py", "alpha")


def test_ties_are_broken_by_path_and_name_not_by_the_tables_row_order():
    """A compaction rewrites the chunks table in another row order: the same definitions must map alike."""
    import pyarrow as pa
    from cortex_tui.core.context.repo_map import SymbolGraph

    rows = [{"path": "b.py", "symbols": ["beta", "alpha"], "refs": ["gamma"], "is_test": False},
            {"path": "a.py", "symbols": ["zeta", "Box", "Box.size"], "refs": ["gamma"], "is_test": False},
            {"path": "c.py", "symbols": ["gamma"], "refs": ["beta", "zeta"], "is_test": False},
            {"path": "y.py", "symbols": ["single"], "refs": [], "is_test": False},
            {"path": "x.py", "symbols": ["solo"], "refs": [], "is_test": False}]

    def ranked(order):
        graph = SymbolGraph.build(pa.Table.from_pylist([rows[i] for i in order]))
        found = graph.rank({}, [])
        return [(graph.paths[f], graph.names[n]) for f, n in zip(found.file, found.name)]

    first = ranked([0, 1, 2, 3, 4])
    assert first == ranked([4, 3, 2, 1, 0]) == ranked([3, 1, 4, 2, 0])
    assert first.index(("x.py", "solo")) + 1 == first.index(("y.py", "single")), "equal scores: by path"
    assert first[0] == ("c.py", "gamma")
    assert first.index(("a.py", "Box")) + 1 == first.index(("a.py", "size")), "equal scores: by path and name"


def test_a_signature_over_several_lines_reads_as_written_on_one():
    """Black's layout (the brackets' contents on lines of their own, a trailing comma) is shown as one line, with no
    space inside the brackets and no comma before the closing one."""
    from cortex_tui.core.context.signatures import signature_lines

    text = ('def open_resource(\n    self, resource: str, mode: str = "rb"\n) -> t.IO[t.AnyStr]:\n    pass\n\n'
            "def render(\n    name: str,\n    **context: t.Any,\n) -> str:\n    pass\n")
    assert signature_lines(text, 10, ["open_resource", "render"]) == {
        "open_resource": (10, 'def open_resource(self, resource: str, mode: str = "rb") -> t.IO[t.AnyStr]:'),
        "render": (15, "def render(name: str, **context: t.Any) -> str:")}


VIEWS = '''from .pricing import price_of


class View:
    def dispatch(self, request):
        return price_of(request)


class CartView(View):
    def dispatch(  # type: ignore[override]
        self, request, sep="#", *, url="http://shop.example/#cart"  # the anchor is part of the url
    ) -> str:
        return price_of(request)
'''
ROUTES = '''import { priceOf } from "./pricing";

export function route(path, // the path as typed
                      base = "//cdn.example") {
  return priceOf(path) + base;
}
'''


def test_a_signature_keeps_no_comment_that_would_hide_the_rest_of_it(repo, cli):
    """The map joins a signature over several lines into one: a comment on its first line (`# type:
    ignore[override]`, `// the path as typed`) then ran to the end of the line and commented out the parameters
    for an agent reading it. Comments are left out; a `#` or `//` inside a string stays."""
    from cortex_tui.core.context.signatures import signature_lines

    commit_file(repo, "shop/pricing.py", PRICING, "Add pricing")
    commit_file(repo, "shop/views.py", VIEWS, "Add views")
    commit_file(repo, "web/routes.js", ROUTES, "Add routes")
    found = cli.json("map", "--budget", "2000")
    signatures = {(e["path"], e["name"]): e["signature"] for e in found["entries"]}
    assert signatures[("shop/views.py", "CartView.dispatch")] == \
        'def dispatch(self, request, sep="#", *, url="http://shop.example/#cart") -> str:', signatures
    assert signatures[("web/routes.js", "route")] == 'export function route(path, base = "//cdn.example") {', signatures
    assert "# type: ignore" not in found["text"] and "the path as typed" not in found["text"]
    # A language whose comments are not known keeps its lines as they are; Rust's lifetimes open no string.
    assert signature_lines("fn get<'a>(s: &'a str, // the key\n  n: u8) -> &'a str {\n}\n", 1, ["get"], "k.rs") == {
        "get": (1, "fn get<'a>(s: &'a str, n: u8) -> &'a str {")}
    assert signature_lines("proc f(a # b\n) =\n", 1, ["f"], "f.unknown")["f"][1] == "proc f(a # b) ="
