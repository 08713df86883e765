"""Search that finds the code: source before the tests, docs and changelogs that repeat its words, a name's
definition before its uses, boosts that reorder close matches only. Real LanceDB, model and git repositories."""

import pytest
from cortex_tui.core.engine import Engine
from cortex_tui.core.records import MemoryDraft
from cortex_tui.core.search.query import Filters, file_naming_stems

from .conftest import Cli, commit_file

COOKIES = '''\
def parse_cookie(header):
    """Parse a Cookie header into a dict of cookies."""
    pairs = [part.split("=", 1) for part in header.split(";") if "=" in part]
    return {key.strip(): value.strip() for key, value in pairs}
'''

COOKIE_TESTS = "\n\n".join(
    f'def test_cookie_{n}():\n    """Cookies parsed from header {n}."""\n'
    f'    assert parse_cookie("a={n}; b={n}")["a"] == "{n}"  # cookies parsed: parse_cookie parses cookies'
    for n in range(8)
) + "\n"

COOKIE_DOCS = "Cookies\n=======\n\nCookies are parsed by ``parse_cookie``: parsing cookies, cookies parsed, cookie.\n"

ROUTING = '''\
class Map:
    """A set of rules."""

    def match(self, rules):
        return [rule for rule in rules if rule]


class MapAdapter:
    """Binds a map to one request."""

    def __init__(self, url_map):
        self.url_map = url_map

    def match(self, path):
        """Find the endpoint for a path."""
        for rule in self.url_map.rules:
            if rule.path == path:
                return rule.endpoint
        raise LookupError(path)
'''

CALLERS = "\n\n".join(
    f"def route_{n}(adapter):\n    # MapAdapter match for route {n}\n    return adapter.match('/r{n}')  # MapAdapter.match"
    for n in range(6)
) + "\n"


def cookie_repo(repo) -> Engine:
    commit_file(repo, "src/cookies.py", COOKIES, "Parse cookies")
    commit_file(repo, "tests/test_cookies.py", COOKIE_TESTS, "Test cookie parsing")
    commit_file(repo, "docs/cookies.rst", COOKIE_DOCS, "Document cookies")
    commit_file(repo, "CHANGES.rst", "- Cookies parsed with parse_cookie keep their order.\n" * 20, "Changelog")
    commit_file(repo, "src/routing.py", ROUTING, "Add routing")
    commit_file(repo, "src/views.py", CALLERS, "Add views")
    engine = Engine(repo)
    engine.code_index(create=True).update(embed=False)
    return engine


def test_source_ranks_above_the_tests_docs_and_changelog_that_repeat_its_words(repo):
    engine = cookie_repo(repo)
    hits = engine.search("where are cookies parsed").hits
    assert hits[0].path == "src/cookies.py", [h.path for h in hits]
    assert "role" in next(h for h in hits if h.path == "tests/test_cookies.py").score.boosts
    # A query about the tests, or pointing under tests/, gets them.
    assert engine.search("tests of cookie parsing").hits[0].path == "tests/test_cookies.py"
    assert engine.search("cookies parsed", Filters(files=("tests/",))).hits[0].path == "tests/test_cookies.py"


def test_a_name_finds_its_definition_before_its_uses(repo):
    engine = cookie_repo(repo)
    top = engine.search("parse_cookie").hits[0]
    assert (top.path, top.symbols) == ("src/cookies.py", ("parse_cookie",))
    assert top.snippet.text.startswith("def parse_cookie(header):") and top.snippet.start_line == 1


def test_a_qualified_name_resolves_to_that_owners_method(repo):
    engine = cookie_repo(repo)
    top = engine.search("MapAdapter.match").hits[0]
    assert top.path == "src/routing.py" and "MapAdapter.match" in top.symbols
    assert top.snippet.text.lstrip().startswith("def match(self, path):")
    assert top.snippet.start_line == ROUTING.splitlines().index("    def match(self, path):") + 1


def test_a_name_typed_with_a_slip_or_in_part_finds_the_definition(repo):
    engine = cookie_repo(repo)
    assert engine.search("parse_cokoie").hits[0].symbols == ("parse_cookie",)
    assert engine.search("parse_coo").hits[0].symbols == ("parse_cookie",)


COMMANDS = """\
class Command:
    \"\"\"A command and its sub-commands.\"\"\"

    def commands(self):
        \"\"\"The sub-commands, sorted.\"\"\"
        return sorted(self.children)
"""

COMPLETIONS = """\
def writeCommands(buf, cmd):
    buf.write("commands=(")
    for child in cmd.children:
        buf.write(child.name)
    buf.write(")")
"""


def test_a_name_typed_with_a_slip_is_not_outranked_by_a_file_its_parts_name(repo):
    # `commands.py` is named by a part of the name typed ("wrtieCommands": wrtie, commands), and its chunk holds
    # the word; what was asked for is the definition of writeCommands.
    commit_file(repo, "src/commands.py", COMMANDS, "Commands")
    commit_file(repo, "src/completions.py", COMPLETIONS, "Completions")
    commit_file(repo, "src/multipart_parser.py", "def feed(chunk):\n    \"\"\"Split a multipart body.\"\"\"\n"
                "    return chunk.split(b'--')\n", "Parser")
    commit_file(repo, "src/forms.py", "from multipart_parser import feed\n\n\ndef parse_form(body):\n"
                "    # multipart_parser splits the body\n    return feed(body)  # multipart_parser\n", "Forms")
    engine = Engine(repo)
    engine.code_index(create=True).update(embed=False)
    hits = engine.search("wrtieCommands").hits
    assert hits[0].symbols == ("writeCommands",), [(h.path, h.symbols) for h in hits[:3]]
    # Plain words still name their file, and a name names the file that bears it whole.
    assert engine.search("write commands").hits[0].path == "src/commands.py"
    assert engine.search("multipart_parser").hits[0].path == "src/multipart_parser.py"


def test_only_plain_words_paths_and_whole_names_name_files():
    assert file_naming_stems("where is the reloader implemented") == {"reload"}
    assert file_naming_stems("FastifyScehma") == {"fastifyscehma"}
    assert file_naming_stems("Fix self.wrtie_commands.") == {"fix", "self", "wrtiecommand"}
    assert file_naming_stems("View.dispatch_request") == {"view", "dispatchrequest"}
    assert file_naming_stems("src/_reloader.py") == {"src", "reload", "py"}
    assert file_naming_stems("the code of getCode") == {"getcod"}


def test_names_typed_with_a_slip_are_matched_against_names_read_once_per_index_version(repo):
    engine = cookie_repo(repo)
    names = engine.workspace.caches.defined_names
    for typed in ("parse_cokoie", "parse_cookei", "MapAdaptr"):
        assert engine.search(typed).hits[0].path in ("src/cookies.py", "src/routing.py")
    assert names.reads == 1
    # A name the index learns later is found with a slip at once: a write moves the table's version.
    commit_file(repo, "src/session.py", "def serialize_session(data):\n    return repr(data)\n", "Sessions")
    engine.code_index().update(embed=False)
    assert engine.search("serialise_session").hits[0].symbols == ("serialize_session",)
    assert names.reads == 2


def test_question_words_do_not_drive_the_match(repo):
    commit_file(repo, "src/reloader.py", "def restart_on_change(paths):\n    return watch(paths)\n", "Reloader")
    commit_file(repo, "src/notes.py", "# where is it implemented? how is it defined? where is it located?\n"
                "IMPLEMENTED = 'implemented where defined'\n", "Notes")
    engine = Engine(repo)
    engine.code_index(create=True).update(embed=False)
    assert engine.search("where is the reloader implemented").hits[0].path == "src/reloader.py"


def test_the_working_change_reorders_close_matches_but_lifts_no_weak_one(repo):
    engine = cookie_repo(repo)
    commit_file(repo, "src/session.py", "def save_session(store):\n    # store the session\n    return store\n\n\n"
                "def cookie_name():\n    return 'session'\n", "Sessions")
    engine.code_index().update(embed=False)
    (repo / "src/session.py").write_text((repo / "src/session.py").read_text() + "\n# edited\n")
    # Recent, on this branch, tied to the modified file: every boost there is, and one query word of three.
    engine.remember(MemoryDraft(text="Sessions keep a cookie name.", files=("src/session.py",)))
    hits = engine.search("where are cookies parsed").hits
    order = [h.path or h.title for h in hits]
    assert order.index("src/cookies.py") < order.index("Sessions keep a cookie name."), order
    memory = hits[order.index("Sessions keep a cookie name.")]
    assert sum(memory.score.boosts.get(b, 0) for b in ("modified_file", "branch", "recency")) < 0.5
    weak = [h for h in hits if h.path == "src/session.py"]
    assert weak and all(h.score.boosts.get("modified_file", 0) < 0.5 for h in weak)
    assert order[0] == "src/cookies.py", order


def test_the_cli_shows_the_definition_first_in_the_engines_order(repo, capsys):
    engine = cookie_repo(repo)
    expected = [(h.path, h.start_line) for h in engine.search("parse_cookie", limit=5).hits]
    shown = Cli(repo, capsys).json("ss", "parse_cookie", "--limit", "5")["hits"]
    assert [(h["path"], h["start_line"]) for h in shown] == expected
    assert shown[0]["path"] == "src/cookies.py" and shown[0]["snippet"]["text"].startswith("def parse_cookie(")


def test_definitions_by_name_are_an_indexed_lookup_filled_in_for_an_older_database(repo):
    engine = cookie_repo(repo)
    chunks = engine.code_index().chunks
    # The lexical pass leaves a label-list index on the defined names: a name is a lookup, not a scan of every
    # chunk's symbols.
    assert {"names": "LabelList"}.items() <= {i.columns[0]: i.index_type for i in chunks.list_indices()}.items()
    plan = chunks.search().where("array_has_any(names, ['parse_cookie'])").explain_plan(True)
    assert "ScalarIndexQuery" in plan and "names_idx" in plan, plan
    # A database written before the column existed: it is filled in when the index is opened, and names resolve.
    db = engine.code_index().db
    chunks.drop_columns(["names"])
    db.conn.open_table("meta").delete("key = 'chunks_names'")
    engine.close()
    engine = Engine(repo)
    rows = engine.code_index().chunks.search().where("path = 'src/routing.py'").select(["symbols", "names"]).to_list()
    assert all(r["names"] == sorted({s.rsplit(".", 1)[-1].lower() for s in r["symbols"]}) for r in rows), rows
    assert any("match" in r["names"] for r in rows)
    top = engine.search("MapAdapter.match").hits[0]
    assert top.path == "src/routing.py" and "MapAdapter.match" in top.symbols


def test_a_file_named_by_a_common_query_word_does_not_fill_the_top(repo):
    # `types.py` is named by "type", a word of the question, and each of its chunks mentions types in passing; the
    # function the question is about lives elsewhere.
    commit_file(repo, "src/types.py", "\n\n".join(
        f"class Type{n}:\n    \"\"\"A parameter type number {n}; its value is converted.\"\"\"\n\n"
        f"    def convert{n}(self, value):\n" + "".join(f"        value = value.strip()  # step {k} of {n}\n" for k in range(12))
        + f"        return value  # type {n}\n" for n in range(6)) + "\n", "Types")
    commit_file(repo, "src/core.py", "def apply_flag(option, given_type):\n"
                "    # The flag value is set on this condition: when a type is provided, keep the flag value.\n"
                "    if given_type is not None and option.flag_value is None:\n"
                "        option.flag_value = given_type\n    return option\n", "Core")
    engine = Engine(repo)
    engine.code_index(create=True).update(embed=False)
    hits = engine.search("fix condition for setting the flag value when a type is provided").hits
    assert [h.path for h in hits[:3]].count("src/types.py") <= 2, [(h.path, h.title) for h in hits[:5]]
    assert "src/core.py" in [h.path for h in hits[:2]], [(h.path, h.title) for h in hits[:5]]


SETTINGS_STEPS = "class Application:\n    \"\"\"The application object.\"\"\"\n\n" + "\n".join(
    f"    def step_{n}(self, path, options=None):\n"
    f"        \"\"\"Read the settings file for step {n} and keep its values.\"\"\"\n"
    + "".join(f"        value_{k} = self.{word}(path, options)  # {word}\n"
              for k, word in enumerate(("open", "parse", "merge", "store", "validate", "apply", "close", "log")))
    + "        return value_0\n" for n in range(5))

SETTINGS_RELOAD = '''def reload_settings(path, watcher):
    """Keep the values of a settings file, read again when the watcher reports that it changed on disk, so that
    every part of the program sees the same configuration without restarting the running process at all."""
    if not watcher.changed(path):
        return None
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    values = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
    watcher.acknowledge(path)
    return values
'''


def test_a_files_further_chunks_yield_to_another_files_match(repo):
    # Five methods of one class say the question's words as well as the function in another file does: the top
    # shows both files before the class's second method.
    commit_file(repo, "src/app.py", SETTINGS_STEPS, "Application steps")
    commit_file(repo, "src/loader.py", SETTINGS_RELOAD, "Reload settings")
    engine = Engine(repo)
    engine.code_index(create=True).update(embed=False)
    hits = [h for h in engine.search("keep the settings file values").hits if h.path == "src/app.py" or
            h.path == "src/loader.py"]
    assert {h.path for h in hits[:2]} == {"src/app.py", "src/loader.py"}, [(h.path, h.title) for h in hits[:4]]
    steps = [h for h in hits if h.path == "src/app.py"]
    assert "repeat" not in steps[0].score.boosts and all(h.score.boosts["repeat"] < 0 for h in steps[1:])
    # A file's own chunks keep their order: each further one yields a little more.
    assert [h.score.relevance for h in steps] == sorted((h.score.relevance for h in steps), reverse=True)


RETRY_POLICY = '''def backoff(attempt, base=0.5, cap=30.0):
    """Wait twice as long after each failed attempt, up to a cap."""
    delay = min(cap, base * (2 ** attempt))
    return delay
'''


def test_a_chunk_is_held_to_its_own_words_more_strictly_than_a_memory(repo):
    # `src/retry/policy.py` matches "retry policy" by its path alone: its code says neither word.
    commit_file(repo, "src/retry/policy.py", RETRY_POLICY, "Backoff")
    engine = Engine(repo)
    engine.code_index(create=True).update(embed=False)
    engine.remember(MemoryDraft(text="Backoff doubles the wait.", files=("src/retry/policy.py",),
                                context="the retry policy"))
    hits = engine.search("retry policy").hits
    chunk = next(h for h in hits if h.path == "src/retry/policy.py")
    memory = next(h for h in hits if h.source == "memory")
    # Code keeps a fifth of its score (weight 4), a memory a third (weight 2, chosen on LoCoMo).
    assert chunk.score.boosts["rerank"] == -0.8 and memory.score.boosts["rerank"] == -0.6667, hits


ROUTER = '''\
class MapAdapter:
    """Binds a URL map to one request's server name and script root."""

    def __init__(self, url_map, server_name, script_name):
        self.url_map = url_map
        self.server_name = server_name
        self.script_name = script_name
        self.default_method = "GET"
        self.subdomain = None

    def build(self, endpoint, values=None, method=None, force_external=False):
        """Build a URL for an endpoint and its values. This produces relative URLs by default; with host
        matching, the URL is absolute when the endpoint is not on this host. Values that don't match any rule
        part are added to the URL's query string. Unlike matching, building does not validate that the URL
        built for one endpoint would be matched by the same endpoint's rule again."""
        values = dict(values or {})
        for rule in self.url_map.rules_for(endpoint):
            if rule.suitable_for(values, method):
                url = rule.build(values)
                return self.server_name + url if force_external else url
        raise LookupError(endpoint)

    def match(self, path_info=None, method=None):
        """Find the rule for a path: returns its endpoint and arguments, raises NotFound when no rule fits, or
        MethodNotAllowed when one fits another method only."""
        path = path_info if path_info is not None else "/"
        for rule in self.url_map.rules:
            arguments = rule.fits(path)
            if arguments is not None:
                if method and rule.methods and method not in rule.methods:
                    raise PermissionError(method)
                return rule.endpoint, arguments
        raise LookupError(path)

    def allowed_methods(self, path_info=None):
        """The methods some rule accepts for a path, for an OPTIONS answer or an Allow header."""
        methods = set()
        for rule in self.url_map.rules:
            if rule.fits(path_info or "/") is not None:
                methods.update(rule.methods or ())
        return sorted(methods)

    def get_host(self, domain_part):
        """The host this adapter answers for, with the subdomain put in front of the server name."""
        if domain_part is None:
            return self.server_name
        return f"{domain_part}.{self.server_name}" if domain_part else self.server_name

    def encode_query_args(self, query_args):
        """Query arguments as one string, keys sorted, so equal arguments always give the same text."""
        if isinstance(query_args, str):
            return query_args
        pairs = sorted((str(key), str(value)) for key, value in dict(query_args).items())
        return "&".join(f"{key}={value}" for key, value in pairs)

    def describe(self):
        """A short description of this adapter for logs and error pages: its host, script root and method."""
        host = self.get_host(self.subdomain)
        return f"<adapter host={host!r} script={self.script_name!r} default method={self.default_method}>"
'''

ROUTER_TESTS = '''\
def test_router_matches_a_url_to_its_endpoint_for_each_method():
    url_map = Map([Rule("/get", methods=["GET"], endpoint="a"), Rule("/post", methods=["POST"], endpoint="b")])
    adapter = url_map.bind("example.org")
    assert adapter.match("/get", method="GET") == ("a", {})  # the router matches the URL to the endpoint
    assert adapter.match("/post", method="POST") == ("b", {})
'''


def test_a_plain_word_of_a_question_that_names_a_definition_lifts_it(repo):
    """"How does the router *match* a URL to an endpoint": `match` is said as a plain word, and the method of
    that name answers it, ahead of a longer method whose docstring repeats more of the question's words and of
    a test that says all of them (the werkzeug question of the search case list)."""
    commit_file(repo, "src/routing/map.py", ROUTER, "Add the map adapter")
    commit_file(repo, "tests/test_routing.py", ROUTER_TESTS, "Test routing")
    engine = Engine(repo)
    engine.code_index(create=True).update(embed=False)
    top = engine.search("how does the router match a URL to an endpoint").hits[0]
    assert (top.path, top.symbols) == ("src/routing/map.py", ("MapAdapter.match",)), top.score.explain()
    assert "word_name#1" in top.score.explain()
    # The same words not asked as a question (a task, a fix's description) keep full text's order.
    assert engine.search("router match URL endpoint").hits[0].symbols == ("MapAdapter.build",)


OVERLOADED = '''\
import typing as t


class MapAdapter:
    """Binds a map to one request."""

    def dispatch(self, view_func, path_info=None, method=None, catch_http_exceptions=False):
        """Does the complete dispatching process. `view_func` is called with the endpoint and a dict with the
        values for the view. It should look up the view function, call it, and return a response object or WSGI
        application. HTTP exceptions are not caught by default so that applications can display nicer error
        messages by just catching them by hand. If you want to stick with the default error messages you can pass
        it ``catch_http_exceptions=True`` and it will catch the HTTP exceptions."""
        try:
            try:
                endpoint, args = self.match(path_info, method)
            except RequestRedirect as e:
                return e
            return view_func(endpoint, args)
        except HTTPException as e:
            if catch_http_exceptions:
                return e
            raise

    @t.overload
    def match(
        self,
        path_info: str | None = None,
        method: str | None = None,
        return_rule: t.Literal[False] = False,
        query_args: t.Mapping[str, t.Any] | str | None = None,
    ) -> tuple[t.Any, t.Mapping[str, t.Any]]: ...

    @t.overload  # type: ignore[misc]
    def match(
        self,
        path_info: str | None = None,
        method: str | None = None,
        return_rule: t.Literal[True] = True,
        query_args: t.Mapping[str, t.Any] | str | None = None,
    ) -> tuple[Rule, t.Mapping[str, t.Any]]: ...

    def match(
        self,
        path_info: str | None = None,
        method: str | None = None,
        return_rule: bool = False,
        query_args: t.Mapping[str, t.Any] | str | None = None,
    ) -> tuple[t.Any | Rule, t.Mapping[str, t.Any]]:
        """Match the path against the bound rules and return the endpoint and its arguments; raise NotFound
        when no rule matches and MethodNotAllowed when one matches for another method."""
        method = (method or self.default_method).upper()
        for rule in self.url_map.rules:
            values = rule.match(path_info or self.path_info, method)
            if values is not None:
                return (rule if return_rule else rule.endpoint), values
        raise LookupError(path_info)
'''


def test_typing_overloads_define_nothing_so_a_name_finds_its_implementation(repo):
    """werkzeug's `MapAdapter.match` is two `@t.overload` signatures, then the method: the signatures resemble a
    search for the name more closely than the method does, so while they counted as its definitions one came
    first. They are code of the file (found by their words), defining nothing."""
    commit_file(repo, "src/routing/map.py", OVERLOADED, "Add the overloaded match")
    engine = Engine(repo)
    engine.code_index(create=True).update(embed=True)
    definers = [h for h in engine.search("MapAdapter.match", limit=10).hits if "MapAdapter.match" in h.symbols]
    assert len(definers) == 1 and definers[0].text.lstrip().startswith("def match("), definers
    implementation = max(n for n, line in enumerate(OVERLOADED.splitlines(), 1) if line == "    def match(")
    top = engine.search("MapAdapter.match").hits[0]
    assert (top.path, top.start_line <= implementation <= top.end_line) == ("src/routing/map.py", True), \
        top.score.explain()


def test_an_index_cut_before_overloads_defined_nothing_cuts_its_code_files_again(repo):
    commit_file(repo, "src/routing/map.py", OVERLOADED, "Add the overloaded match")
    commit_file(repo, "src/cookies.py", COOKIES, "Parse cookies")
    engine = Engine(repo)
    index = engine.code_index(create=True)
    index.update(embed=False)
    # As an earlier version left it: the overloads' chunks define the name, and no record of the cut.
    stubs = "path = 'src/routing/map.py' AND text LIKE '%@t.overload%'"
    index.db.update(index.chunks, stubs, {"symbols": ["MapAdapter.match"], "names": ["match"]})
    index.db.conn.open_table("meta").delete("key = 'chunks_cut'")
    with_code = {r["path"] for r in index.chunks.search().where("kind = 'code'").select(["path"]).to_list()}
    engine.close()
    engine = Engine(repo)
    report = engine.code_index().update(embed=False)
    # The files with code, and no other (any of them may hold a large class, cut otherwise since).
    assert report.changed == len(with_code) < report.listed and "src/cookies.py" in with_code, report
    rows = engine.code_index().chunks.search().where(stubs).select(["symbols", "names"]).to_list()
    assert len(rows) == 2 and all(r["symbols"] == r["names"] == [] for r in rows), rows
    implementation = max(n for n, line in enumerate(OVERLOADED.splitlines(), 1) if line == "    def match(")
    definers = [h for h in engine.search("MapAdapter.match").hits if "MapAdapter.match" in h.symbols]
    assert [h.start_line <= implementation <= h.end_line for h in definers] == [True], definers


def test_an_overload_with_no_implementation_beside_it_still_defines_its_name():
    """A `.pyi` stub file declares a compiled module's functions: there the overloads are all there is."""
    from cortex_tui.core.index.chunker import chunk_file

    stub = "".join(f"@overload\ndef escape(s: {kind}, quote: bool = ...) -> {kind}:\n    '''{kind} in, {kind} out: the "
                   f"characters & < > \" ' replaced by HTML-safe sequences, {'words ' * 40}'''\n    ...\n\n"
                   for kind in ("str", "bytes"))
    assert [c.symbols for c in chunk_file(stub, "python")] == [["escape"], ["escape"]]
    implemented = stub + "def escape(s, quote=True):\n    return _escape(s, quote)\n"
    chunks = chunk_file(implemented, "python")
    assert chunks[0].symbols == [] and chunks[-1].symbols == ["escape"] and "return _escape" in chunks[-1].text


PARSERS = ("def _parse_urlencoded(stream, limit):\n" + "    items = stream.read(limit)\n" * 12
           + "    return items\n\n\nclass MultiPartParser:\n"
           + "".join(f"    def step_{i}(self, data):\n" + "        data = data.strip()\n" * 25 + "        return data\n\n"
                     for i in range(4)))


def test_a_large_class_header_opens_its_first_member_chunk_not_the_one_before(repo):
    """werkzeug's `MultiPartParser`: a class too large for one chunk whose header is one line. Merged as small
    chunks are, the header ended the chunk of the function above it, so searching the class's name showed that
    function; it now opens its first method's chunk."""
    from cortex_tui.core.index.chunker import chunk_file

    chunks = chunk_file(PARSERS, "python")
    owner = next(c for c in chunks if "MultiPartParser" in c.symbols)
    assert owner.text.lstrip("\n").startswith("class MultiPartParser:\n    def step_0"), owner.text[:80]
    assert owner.symbols[:2] == ["MultiPartParser", "MultiPartParser.step_0"]
    before = next(c for c in chunks if "_parse_urlencoded" in c.symbols)
    assert "class MultiPartParser" not in before.text
    commit_file(repo, "src/formparser.py", PARSERS, "Add the parsers")
    engine = Engine(repo)
    engine.code_index(create=True).update(embed=False)
    top = engine.search("MultiPartParser").hits[0]
    assert top.start_line <= PARSERS.splitlines().index("class MultiPartParser:") + 1 <= top.end_line
    assert "_parse_urlencoded" not in top.symbols, top.score.explain()


def test_an_index_cut_before_class_headers_opened_their_chunk_is_cut_again_and_searchable_meanwhile(repo, monkeypatch):
    """An index of cut format 2 (a large class's header ended the chunk before it) is read again by the next pass;
    until then it is the index it was, not an empty one."""
    from cortex_tui.core.index import chunker

    commit_file(repo, "src/formparser.py", PARSERS, "Add the parsers")
    with monkeypatch.context() as old_cut:
        old_cut.setattr(chunker, "_header_opens_first_member", lambda spans, measure: spans)
        engine = Engine(repo)
        index = engine.code_index(create=True)
        index.update(embed=False)
        index.db.set_metas({"chunks_cut": "2"})
        engine.close()
    class_line = PARSERS.splitlines().index("class MultiPartParser:") + 1

    engine = Engine(repo)
    assert engine.has_index() and engine.code_index().status().stale >= 1
    assert "_parse_urlencoded" in engine.search("MultiPartParser").hits[0].symbols, "still the old cut"
    engine.code_index().update(embed=False)
    top = engine.search("MultiPartParser").hits[0]
    assert top.start_line <= class_line <= top.end_line and "_parse_urlencoded" not in top.symbols


@pytest.mark.parametrize("first_member", ["    def __init__(self):\n        self.parts = []\n\n", "    @overload\n"
                                          "    def step_0(self, data: str) -> str: ...\n"])
def test_a_class_header_opens_its_chunk_whatever_its_first_member_is(first_member):
    """A small first member (an `__init__`, an overload) made the header and it one small chunk, which was merged
    into the chunk before it as small chunks are: the header's chunk is never merged into a previous definition."""
    from cortex_tui.core.index.chunker import chunk_file

    source = PARSERS.replace("class MultiPartParser:\n", "class MultiPartParser:\n" + first_member)
    chunks = chunk_file(source, "python")
    before = next(c for c in chunks if "_parse_urlencoded" in c.symbols)
    owner = next(c for c in chunks if "MultiPartParser" in c.symbols)
    assert "class MultiPartParser" not in before.text and "MultiPartParser" not in before.symbols
    assert owner.text.lstrip("\n").startswith("class MultiPartParser:\n" + first_member.splitlines()[0])


WRAPPERS = '''\
class Request:
    """An incoming WSGI request."""

    def __init__(self, environ):
        self.environ = environ
        self._cached = None

    def get_data(self, cache=True):
        """Read the buffered incoming data from the client's stream into one bytes object."""
        if self._cached is None:
            self._cached = self.environ["wsgi.input"].read()
        return self._cached


class HeaderFields:
    """Fields of a request's header, each read only."""

    content_type = "The media type of the entity body of the request, read only."
    content_length = "The size of the entity body of the request in bytes, read only."
    content_encoding = "A modifier to the media type of the entity body, read only."
'''


def test_a_question_in_everyday_words_finds_the_code_that_says_them_otherwise(repo):
    """"How is the request body read": code says "data" or "stream" for a request's body (werkzeug's
    `Request.get_data`, the case list's question), and header fields that say "body" and "read only" in passing
    came first. Asked through the resident server, as the CLI is used."""
    commit_file(repo, "src/wrappers.py", WRAPPERS, "Add the request wrapper")
    Engine(repo).code_index(create=True).update(embed=False)
    cli = Cli(repo)
    top = cli.json("ss", "how is the request body read", "--limit", "3")["hits"][0]
    assert "Request.get_data" in top["symbols"], top
    assert "data" in top["snippet"]["text"]
    # One way only: a question about data is not about a payload or a body.
    assert parse_query_alternatives("how is the data read") == {}
    # Not asked as a question (a task or a fix's description), the words are searched as written.
    assert cli.json("ss", "request body read", "--limit", "1")["hits"][0]["symbols"] == ["HeaderFields"]


def parse_query_alternatives(question: str) -> dict:
    from cortex_tui.core.search.query import said_words
    from cortex_tui.core.search.synonyms import alternatives

    return alternatives(said_words(question))


def test_a_word_and_the_words_standing_for_it_cover_it_once_and_for_less():
    from cortex_tui.core.search.rerank import coverage

    texts = ["the body of the request", "request data and its stream", "request data", "request only", "nothing"]
    shares = coverage(("request", "body"), texts, {"body": ("data", "stream")})
    assert shares[0] == 1.0 > shares[1] == shares[2] > shares[3] > shares[4] == 0.0, shares
    plain = coverage(("request", "body"), texts)
    assert plain[1] == plain[3] < 1.0 == plain[0]


GO_CONTEXT = """package gin

type Context struct {
\tindex    int8
\thandlers []func(*Context)
}

// Next runs the pending handlers of the chain inside the calling handler.
func (c *Context) Next() {
\tc.index++
\tfor c.index < int8(len(c.handlers)) {
\t\tc.handlers[c.index](c)
\t\tc.index++
\t}
}
"""

GO_ITERATOR = """package gin

type Iterator[T any] struct {
\titems []T
\tat    int
}

// Next moves to the next item: Next, Next, Next until Next says no.
func (it *Iterator[T]) Next() bool {
\tit.at++
\treturn it.at < len(it.items)
}
"""

RUST_BUFFER = """pub struct ReceiverBuffer<'a, W> {
    out: &'a mut W,
}

impl<'a, W: Write> ReceiverBuffer<'a, W> {
    pub fn poll(&mut self) -> bool {
        self.out.flush().is_ok()
    }
}
"""

JS_RESPONSE = """var res = Object.create(http.ServerResponse.prototype);

res.send = function send(body) {
  var chunk = body;
  this.end(chunk);
  return this;
};

View.prototype.lookup = function lookup(name) {
  return resolve(this.root, name);
};

exports.compileTrust = function (value) {
  return value;
};
"""


def test_methods_and_assigned_functions_are_named_as_people_type_them(repo):
    """A Go method by its receiver's type (`Context.Next`, not a bare `Next` that answers any type's), a Rust impl's
    method without the type's generic arguments (`ReceiverBuffer.poll`, not `ReceiverBuffer<'a, W>.poll`), and a
    JavaScript function defined by assignment, as express defines its API (`res.send = function send`)."""
    commit_file(repo, "context.go", GO_CONTEXT, "Add the context")
    commit_file(repo, "iterator.go", GO_ITERATOR, "Add an iterator")
    commit_file(repo, "src/walk.rs", RUST_BUFFER, "Add the buffer")
    commit_file(repo, "lib/response.js", JS_RESPONSE, "Add the response")
    engine = Engine(repo)
    engine.code_index(create=True).update(embed=False)
    for name, path in [("Context.Next", "context.go"), ("Iterator.Next", "iterator.go"),
                       ("ReceiverBuffer.poll", "src/walk.rs"), ("res.send", "lib/response.js"),
                       ("View.lookup", "lib/response.js"), ("compileTrust", "lib/response.js")]:
        top = engine.search(name).hits[0]
        assert (top.path, name in top.symbols) == (path, True), (name, top.symbols, top.score.explain())
        assert top.score.ranks.get("symbol") == 1, (name, top.score.explain())


def test_an_index_cut_before_names_were_qualified_cuts_its_files_with_code_again(repo, monkeypatch):
    from cortex_tui.core.index import chunker

    commit_file(repo, "context.go", GO_CONTEXT, "Add the context")
    commit_file(repo, "lib/response.js", JS_RESPONSE, "Add the response")
    commit_file(repo, "src/cookies.py", COOKIES, "Parse cookies")
    with monkeypatch.context() as old_cut:
        # As the previous version cut them: Go methods named bare, no JavaScript function defined by assignment
        # (so response.js holds no code chunk at all), and the cut recorded as format 3.
        named = chunker.definition_name
        old_cut.setattr(chunker, "_go_method_name", lambda node: chunker._text(node.child_by_field_name("name")))
        old_cut.setattr(chunker, "definition_name",
                        lambda node, language: None if node.type == "expression_statement" else named(node, language))
        engine = Engine(repo)
        index = engine.code_index(create=True)
        index.update(embed=False)
        index.db.set_metas({"chunks_cut": "3"})
        kinds = {r["kind"] for r in index.chunks.search().where("path = 'lib/response.js'").select(["kind"]).to_list()}
        assert kinds == {"preamble"}, kinds
        with_code = {r["path"] for r in index.chunks.search().where("kind = 'code'").select(["path"]).to_list()}
        engine.close()
    engine = Engine(repo)
    assert "Context.Next" not in engine.search("Context.Next").hits[0].symbols, "still the old cut until the pass"
    report = engine.code_index().update(embed=False)
    # Every file with code, and the JavaScript file too, though it held no code chunk.
    assert report.changed == len(with_code | {"lib/response.js"}) < report.listed, report
    assert "Context.Next" in engine.search("Context.Next").hits[0].symbols
    assert "res.send" in engine.search("res.send").hits[0].symbols


def test_javascript_assignments_define_what_they_name_and_nothing_else():
    from cortex_tui.core.index.chunker import chunk_file

    source = ("req.get = req.header = function header(name) {};\nFoo\n  .prototype\n  .bar = function () {};\n"
              "Foo.prototype = function () {};\nthis.x = function () {};\na[b].c = function () {};\n"
              "total = count + 1;\nmodule.exports = class Router {\n  handle(req) { return req; }\n};\n")
    symbols = [s for chunk in chunk_file(source, "javascript") for s in chunk.symbols]
    assert symbols == ["req.get", "Foo.bar", "Router", "Router.handle"]


def test_penalties_together_take_a_score_to_zero_not_below(repo):
    """A changelog (role -1.00) that the reranker also penalises was shown with a negative score; at 0 it is not
    shown at all (a hit that scores nothing fills no list)."""
    commit_file(repo, "src/cookies.py", COOKIES, "Parse cookies")
    commit_file(repo, "CHANGES.rst", "- Cookie headers with quoted values parse.\n" * 20 + "- Other quoted things.\n",
                "Changelog")
    engine = Engine(repo)
    engine.code_index(create=True).update(embed=False)
    hits = engine.search("split cookie header pairs quoted", limit=10).hits
    assert hits and not any(h.path == "CHANGES.rst" for h in hits), [h.score.explain() for h in hits]
    assert all(h.score.total > 0.0 for h in hits), [h.score.explain() for h in hits]


def test_a_definitions_doc_comment_opens_its_chunk():
    """gin's `ClientIP` doc comment was a chunk of its own, with no name, ranked above the function it describes;
    express leaves a blank line under each JSDoc block. A trailing comment of the line before stays there."""
    from cortex_tui.core.index.chunker import chunk_file

    body = "".join(f"\tvalue{i} := strings.TrimSpace(c.requestHeader(\"X-Forwarded-For-{i}\"))\n" for i in range(12))
    imports = "".join(f'\t"github.com/gin-gonic/gin/internal/module{i}"\n' for i in range(12))
    go = (f"package gin\n\nimport (\n{imports})\n\nvar trusted = true // whether proxies are trusted\n"
          "// ClientIP implements one best effort algorithm to return the real client IP.\n"
          "// It calls c.RemoteIP() under the hood, to check if the remote IP is a trusted proxy or not.\n"
          f"func (c *Context) ClientIP() string {{\n{body}\treturn value0\n}}\n\n"
          "// RemoteIP parses the IP from Request.RemoteAddr, normalizes and returns the IP (without the port).\n"
          f"func (c *Context) RemoteIP() string {{\n{body}\treturn value1\n}}\n")
    for name, comment in (("Context.ClientIP", "// ClientIP implements"), ("Context.RemoteIP", "// RemoteIP parses")):
        chunk = next(c for c in chunk_file(go, "go") if name in c.symbols)
        assert chunk.text.lstrip("\n").startswith(comment), (name, chunk.start_line, chunk.text[:80])
    assert not any(c.text.startswith("var trusted") and "ClientIP" in c.symbols for c in chunk_file(go, "go"))
    js = ("/**\n * Set a cookie on the response.\n *\n * @param {String} name\n * @public\n */\n\n"
          "res.cookie = function (name, value, options) {\n"
          + "".join(f"  var part{i} = encodeURIComponent(String(value)) + options.path + '{i}';\n" for i in range(12))
          + "  return this;\n};\n")
    chunk = next(c for c in chunk_file(js, "javascript") if "res.cookie" in c.symbols)
    assert chunk.start_line == 1 and "Set a cookie" in chunk.text


def test_a_large_run_of_top_level_code_that_defines_nothing_is_cut_into_windows():
    """A JavaScript test file is one `describe(...)` call: express's `test/res.sendFile.js` was a chunk of 904
    lines, which matched nearly any question about sending files."""
    from cortex_tui.core.index.chunker import MAX_CHUNK_TOKENS, WINDOW_LINES, chunk_file

    cases = "".join(f"  it('should send file {i}', function (done) {{\n    request(app).get('/{i}')\n"
                    f"      .expect(200, 'file {i}', done);\n  }});\n\n" for i in range(80))
    source = f"var request = require('supertest');\n\ndescribe('res.sendFile', function () {{\n{cases}}});\n"
    chunks = chunk_file(source, "javascript")
    assert len(chunks) > 3 and all(c.end_line - c.start_line < WINDOW_LINES for c in chunks), \
        [(c.start_line, c.end_line) for c in chunks]
    assert all(c.tokens <= MAX_CHUNK_TOKENS for c in chunks)
    assert "".join(c.text for c in chunks) == source  # every line once


def test_a_methods_snippet_opens_at_its_signature_when_its_class_line_is_in_another_chunk():
    """werkzeug's `MapAdapter.match` chunk opens at `def match(` (the class is cut at its methods); the snippet
    looked for `MapAdapter` first, found none, and fell back to the lines holding most query words (`t.Mapping`
    is "map", the docstring repeats "match"), below the signature."""
    from cortex_tui.core.search.snippet import best_window
    from cortex_tui.core.text import word_stems

    text = ("    def match(\n        self,\n        path_info: str | None = None,\n        method: str | None = None,\n"
            "        query_args: t.Mapping[str, t.Any] | None = None,\n    ) -> tuple:\n        \"\"\"The usage is simple: you just pass the match method the current\n"
            "        path info. If the path matches, match returns; a match that fails raises.\"\"\"\n"
            "        return self.map.match(path_info)\n")
    snippet = best_window(text, word_stems("mapadapter map adapter match"), 492, focus="MapAdapter.match")
    assert snippet.start_line == 492 and snippet.text.startswith("    def match("), snippet
