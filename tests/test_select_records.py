"""A code fix's context leads with code: the credits a fix's description carries and the project's records (a
changelog, AUTHORS, CI files) its words mention do not put those files first. Real repositories, the real index."""

from __future__ import annotations

from cortex_tui.core.context.task_words import without_credits, without_links

from .conftest import indexed_engine

REDIRECT = ("def follow_redirect(response, referer):\n    \"\"\"Follow a redirect; a relative referer is made absolute"
            " first.\"\"\"\n    location = response.headers['location']\n    return join(referer, location)\n\n\n"
            "def join(base, path):\n    return base.rstrip('/') + '/' + path.lstrip('/')\n")


def test_credit_trailers_and_addresses_are_not_what_a_task_says():
    task = ("fix: normalize referer before redirect (#1908) Co-authored-by: Jane Roe "
            "<175728472+jroe@users.noreply.github.com> Signed-off-by: Bo Li <bo@li.dev>")
    assert without_credits(task).split() == ["fix:", "normalize", "referer", "before", "redirect", "(#1908)"]
    assert without_credits("Co-authored-by: Jane <j@x.org>") == "Co-authored-by: Jane <j@x.org>"


def test_the_people_a_fix_credits_do_not_lead_its_context(repo):
    """The citation file lists the people the trailers credit, with their addresses: read as the task, their names
    match it best (and the address's host would ask for the project's housekeeping files). The redirect code
    leads."""
    citation = "".join(f"authors:\n  - family-names: Roe\n    given-names: Jane\n    email: jroe{i}@users.noreply"
                       f".github.com\n  - family-names: Li\n    given-names: Bo\n" for i in range(3))
    engine = indexed_engine(repo, {"web/redirects.py": REDIRECT, "CITATION.cff": citation})
    task = ("fix: normalize referer before redirect (#1908) Co-authored-by: Jane Roe "
            "<jroe@users.noreply.github.com> Co-authored-by: Bo Li <bo0@li.dev>")
    assert engine.select(task, 4000).ranked_files[0] == "web/redirects.py"


def test_a_changelog_the_fix_mentions_follows_the_code(repo):
    """The changelog says the task's words more often than the code; the task mentions it (a fix that adds a
    changelog entry), so it counts, but after the code."""
    changelog = "".join(f"## 1.{i}\n- Fix the redirect of a relative referer (#{i}).\n\n" for i in range(12))
    engine = indexed_engine(repo, {"web/redirects.py": REDIRECT, "CHANGELOG.md": changelog})
    ranked = engine.select("Fix the redirect of a relative referer * Add a changelog entry", 4000).ranked_files
    assert ranked[:2] == ["web/redirects.py", "CHANGELOG.md"], ranked


def test_a_link_in_the_task_does_not_ask_for_the_docs(repo):
    """The task links to a page under a `docs` host: the link's words are an address, not a request for the
    project's docs, so the docs page that repeats the task's words stays behind the code."""
    page = "".join(f"## Redirects {i}\n\nThe redirect of a relative referer is made absolute first.\n\n"
                   for i in range(12))
    engine = indexed_engine(repo, {"web/redirects.py": REDIRECT, "docs/redirects.md": page})
    task = "Fix the redirect of a relative referer (see https://docs.example.org/redirects#relative)"
    selection = engine.select(task, 4000)
    assert selection.ranked_files[0] == "web/redirects.py"
    # Weighed as a page nobody asked for, not as asked-for docs.
    docs = next(i for i in [*selection.chosen, *selection.left_out] if i.path == "docs/redirects.md")
    assert docs.signals["role"] == 0.1, docs.signals
    assert without_links(task).split() == ["Fix", "the", "redirect", "of", "a", "relative", "referer", "(see"]


def test_docs_the_task_asks_for_follow_the_code(repo):
    """A fix of a typo says "docs" and "typo": the page that repeats its words counts, after the code, whose
    docstrings and messages such a fix changes as often; a draft's context reads the docs as it reads the code."""
    page = "".join(f"## Redirects {i}\n\nThe redirect of a relative referer is made absolute first.\n\n"
                   for i in range(12))
    engine = indexed_engine(repo, {"web/redirects.py": REDIRECT, "docs/redirects.md": page})
    task = "docs: fix a typo in the redirect of a relative referer"
    assert engine.select(task, 4000).ranked_files[:2] == ["web/redirects.py", "docs/redirects.md"]
    assert engine.select(task, 4000, purpose="drafting").ranked_files[0] == "docs/redirects.md"
