"""Results that mean something: boosts never create a match, memories and code compete on one scale, a search
with no query leads with the working change, snippets show the matching lines. Real LanceDB, model and git."""

from cortex_tui.core.engine import Engine
from cortex_tui.core.records import MemoryDraft
from cortex_tui.core.requests import SearchFilters, SearchRequest
from cortex_tui.core.search.query import Filters

from .conftest import Cli, commit_file, git

MEMORIES = [
    ("NO_COLOR progress test", "The progress bar test sets NO_COLOR and checks that no escape codes are written."),
    ("release notes", "Release notes are written in the changelog before each version is tagged."),
    ("retry policy", "Retry network calls three times with jitter before giving up."),
    ("pager choice", "The pager falls back to less when the PAGER variable is unset."),
]

SHELL_COMPLETION = '''\
class ZshComplete:
    """Shell completion for zsh: prints the completion script and formats each completion item."""

    name = "zsh"

    def source(self):
        return "compdef _complete zsh"

    def format_completion(self, item):
        return f"{item.type}\\n{item.value}"
'''


def code_repo(repo):
    commit_file(repo, "src/shell_completion.py", SHELL_COMPLETION, "Add zsh shell completion")
    commit_file(repo, "src/progress.py", "def render_bar(width):\n    return '#' * width\n", "Add the progress bar")
    commit_file(repo, "src/colors.py", "def strip_ansi(text):\n    return text.replace('\\x1b', '')\n", "Add colours")
    engine = Engine(repo)
    engine.code_index(create=True).update(embed=True)
    engine.remember_many([MemoryDraft(text=t, title=title) for title, t in MEMORIES])
    return engine


def test_a_query_no_word_of_which_matches_returns_nothing_and_says_so(repo):
    engine = code_repo(repo)
    # Words of the branch and of the commit subjects are folded into every query: alone they match nothing.
    git(repo, "checkout", "-q", "-b", "fix/retry-jitter")
    commit_file(repo, "notes.txt", "x\n", "Retry network calls with jitter and progress")
    results = engine.search("xylophone quantum zeppelin")
    assert results.hits == []
    assert any("no match for 'xylophone quantum zeppelin'" in note for note in results.notes)
    # Words that are in the index, narrowed to what holds none of them: the filters say why, not the index.
    narrowed = engine.smart_search(SearchRequest("render the progress bar", SearchFilters(past_sessions="only")))
    assert narrowed.hits == [] and "no match for 'render the progress bar' among what the filters keep" in narrowed.notes


def test_context_words_reorder_matches_but_never_make_one(repo):
    engine = code_repo(repo)
    git(repo, "checkout", "-q", "-b", "fix/retry-jitter")
    found = engine.search("pager", Filters(memories_only=True))
    assert [h.title for h in found.hits] == ["pager choice"]


def test_one_word_of_three_is_reported_as_a_third(repo):
    engine = code_repo(repo)
    hit = engine.search("xylophone zeppelin pager", Filters(memories_only=True)).hits[0]
    assert hit.title == "pager choice"
    assert abs(hit.score.coverage - 1 / 3) < 1e-9 and "words 33%" in hit.score.explain()
    assert hit.score.relevance < 0.5


def test_matching_code_outranks_unrelated_memories_with_branch_and_recency_boosts(repo):
    engine = code_repo(repo)
    results = engine.search("shell completion zsh")
    assert results.hits[0].source == "code" and "ZshComplete" in results.hits[0].symbols
    titles = [h.title for h in results.hits]
    assert "NO_COLOR progress test" not in titles and "release notes" not in titles
    # A memory that matches well still ranks first, with its boosts shown.
    top = engine.search("NO_COLOR progress bar test").hits[0]
    assert top.title == "NO_COLOR progress test" and {"branch", "recency"} <= set(top.score.boosts)


CHANGELOG = "\n".join(
    f"- Version {n}: add the shell completion entry, fix the pager on Windows, support pathlib paths. "
    f"Add a FAQ entry about encoding errors on Windows." for n in range(200)
) + "\n"


def test_a_search_with_no_query_leads_with_the_working_change(repo):
    engine = code_repo(repo)
    commit_file(repo, "CHANGES.md", CHANGELOG, "Add FAQ entry about encoding errors on Windows")
    commit_file(repo, "src/pager.py", "def pager(text):\n    '''Fix the pager on Windows.'''\n", "Fix the pager on Windows")
    (repo / "src/progress.py").write_text("def render_bar(width):\n    return '=' * width\n")
    (repo / "src/colors.py").write_text("def strip_ansi(text):\n    return text\n")
    engine.code_index().update(embed=True)
    results = engine.search("", Filters(code_only=True))
    assert results.implicit
    paths = [h.path for h in results.hits]
    assert set(paths[:2]) == {"src/progress.py", "src/colors.py"}, paths
    assert "change" in results.hits[0].score.ranks and "modified_file" in results.hits[0].score.boosts


LONG_MODULE = "\n".join(f"def step_{n}(x):\n    return x + {n}\n" for n in range(12)) + (
    "\ndef retry_with_backoff(call):\n    # exponential backoff between attempts\n    return call()\n"
)


def test_snippets_show_the_lines_that_match_with_their_numbers(repo, capsys):
    commit_file(repo, "src/steps.py", LONG_MODULE, "Add steps")
    engine = Engine(repo)
    engine.code_index(create=True).update(embed=False)
    note = "Line one.\nLine two.\nLine three.\nLine four.\nLine five.\nWe chose exponential backoff for retries.\nEnd."
    engine.remember(MemoryDraft(text=note, title="notes"))
    results = engine.search("exponential backoff")
    code = next(h for h in results.hits if h.source == "code")
    backoff_line = LONG_MODULE.splitlines().index("    # exponential backoff between attempts") + 1
    assert code.snippet.start_line <= backoff_line <= code.snippet.end_line
    assert code.snippet.start_line > code.start_line
    assert "exponential backoff between attempts" in code.snippet.text
    memory = next(h for h in results.hits if h.source == "memory")
    assert memory.snippet.start_line == 6 and memory.snippet.text.startswith("We chose exponential backoff")
    code_, out, _ = Cli(repo)("ss", "exponential backoff")
    assert code_ == 0 and f"{backoff_line:>5}      # exponential backoff between attempts" in out


SVG = '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 10 10"><text x="1" y="9">x</text></svg>\n'
DEVCONTAINER = '{\n  "name": "dev",\n  "customizations": {"vscode": {"settings": {"python.x": "on"}}}\n}\n'


def test_hits_that_score_zero_do_not_fill_the_list(repo):
    """`cortex ss "[bold]x[/]"` on markupsafe listed 7 of 10 hits at 0.000 (SVGs, devcontainer.json): matched, but
    penalised to nothing. A zero-score hit says nothing about the query and stays out."""
    for n in range(4):
        commit_file(repo, f"docs/_static/icon-{n}.svg", SVG, f"Add icon {n}")
    commit_file(repo, ".devcontainer/devcontainer.json", DEVCONTAINER, "Add a dev container")
    engine = Engine(repo)
    engine.code_index(create=True).update(embed=True)
    engine.remember(MemoryDraft(text="escape [bold]x[/] markup in titles", kind="decision"))
    found = engine.search("[bold]x[/]")
    assert found.hits and all(h.score.total > 0 for h in found.hits), [(h.title, h.score.total) for h in found.hits]
    assert found.hits[0].title == "escape [bold]x[/] markup in titles"
    # A selection reads the same search as evidence and keeps them: cut there as well, they cost dev edit recall at
    # 12,000 tokens (0.833 -> 0.788).
    kept = engine.workspace.searcher().search("[bold]x[/]", unscored=True)
    assert any(h.score.total == 0 for h in kept.hits), [(h.title, h.score.total) for h in kept.hits]
