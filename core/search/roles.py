"""What part a file plays in a repository (code, tests, docs and translations, changelog, housekeeping, examples,
fixtures, vendored code, ...), and whether a task or query is about that part.

Changelogs, docs, CI files, templates, licences, example trees and fixtures repeat the words of almost every task
(a changelog names every API that ever changed), so selection and search count them only when the words asking
are about them: the same weights rank files in `select` and chunks in `search`. They were set on the localisation
dev set (see docs/benchmarks.md). Generated files never reach the index (`walk.py`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ..index.languages import is_test_path

DOC_SUFFIXES = (".md", ".mdx", ".rst", ".txt", ".adoc", ".po", ".pot")
DOC_DIRS = re.compile(r"(^|/)(docs?|documentation|site|website|i18n|l10n|locales?|translations?|tutorials?)/", re.I)
HISTORY = re.compile(
    r"(^|/)(changes|changelog|history|news|whatsnew|release[-_]?notes?|releases)([-_.][^/]*)?$"
    r"|(^|/)(changes|changelog|changelog\.d|release[-_]?notes|releases|history)/", re.I)
EXAMPLE_DIRS = re.compile(r"(^|/)(examples?|samples?|demos?|benchmarks?|benches|_?scripts)/", re.I)
# Project housekeeping: CI definitions and repository templates, and the all-capitals files at the root (LICENSE,
# CONTRIBUTING.md, CODE_OF_CONDUCT.md, SECURITY.md, ...) that govern the project rather than implement or document
# it (README and FAQ are documentation).
META = re.compile(r"(^|/)\.(github|gitlab|circleci)/|^\.?(travis|appveyor|gitlab-ci|codecov|golangci)\.ya?ml$"
                  r"|(^|/)(pull_request_template\.md|ISSUE_TEMPLATE/)"
                  r"|^(?!README|FAQ)[A-Z][A-Z0-9_-]+(\.(md|markdown|rst|txt|adoc))?$")
FIXTURE_DIRS = re.compile(r"(^|/)(testdata|fixtures?)/", re.I)
VENDOR_DIRS = re.compile(r"(^|/)(vendor|vendored|third[-_]party|node_modules|bower_components)/", re.I)
CONFIG_SUFFIXES = (".json", ".yaml", ".yml", ".toml", ".ini", ".cfg", ".lock")

TOPIC_WORDS: dict[str, frozenset[str]] = {
    "tests": frozenset({"test", "tests", "testing", "tested", "pytest", "unittest", "spec", "specs", "fixture",
                        "fixtures", "coverage", "mock", "mocks", "mocked", "mocking", "stub", "stubs", "stubbed",
                        "flaky", "conftest", "testcase", "testcases"}),
    "docs": frozenset({"doc", "docs", "documentation", "readme", "tutorial", "tutorials", "guide", "translation",
                       "translations", "translated", "typo", "typos", "spelling", "wording"}),
    "history": frozenset({"changelog", "changelogs", "release", "releases", "history", "news", "whatsnew"}),
    "examples": frozenset({"example", "examples", "sample", "samples", "demo", "benchmark", "benchmarks", "script",
                           "scripts"}),
    "config": frozenset({"config", "configuration", "settings", "pyproject", "package", "dependency", "dependencies",
                         "ci"}),
    "meta": frozenset({"ci", "workflow", "workflows", "github", "actions", "lint", "linter", "license", "licence",
                       "licensing", "copyright", "contributing", "contributor", "contributors", "conduct",
                       "governance", "policy", "template", "templates", "funding", "sponsor", "sponsors",
                       "maintainers", "authors"}),
    "vendored": frozenset({"vendor", "vendored", "third", "upstream", "bundled"}),
}

# role -> (the topic that wants it, its weight when the words asking are not about that topic)
_ROLES: dict[str, tuple[str, float]] = {
    "fixture": ("tests", 0.1),
    "test": ("tests", 0.35),
    "history": ("history", 0.0),
    "meta": ("meta", 0.1),
    "docs": ("docs", 0.1),
    "config": ("config", 0.5),
    "example": ("examples", 0.1),
    "vendored": ("vendored", 0.1),
}
_TOPIC_OF_ROLE = {role: topic for role, (topic, _) in _ROLES.items()}
_PATHISH = re.compile(r"[\w.\-]+/[\w.\-/]*")


def topics_of(text: str) -> dict[str, bool]:
    """Which roles' topics the words of a task or query are about."""
    said = set(re.findall(r"[a-z]+", text.lower()))
    return {topic: bool(said & words) for topic, words in TOPIC_WORDS.items()}


def asked_topics(text: str, paths: Iterable[str] = ()) -> dict[str, bool]:
    """The topics of a query: its words (`topics_of`), and the role of any path it names or is filtered to
    (`tests/test_http.py cookie`, `file:docs/`), since a person who points under tests/ wants tests."""
    topics = topics_of(text)
    for path in [*paths, *_PATHISH.findall(text)]:
        role = path_role(path, is_test_path(path))
        if role != "code":
            topics[_TOPIC_OF_ROLE[role]] = True
    return topics


def path_role(path: str, is_test: bool) -> str:
    if FIXTURE_DIRS.search(path):
        return "fixture"
    if VENDOR_DIRS.search(path):
        return "vendored"
    if is_test:
        return "test"
    if HISTORY.search(path):
        return "history"
    if META.search(path):
        return "meta"
    if path.endswith(DOC_SUFFIXES) or DOC_DIRS.search(path):
        return "docs"
    if path.endswith(CONFIG_SUFFIXES):
        return "config"
    if EXAMPLE_DIRS.search(path):
        return "example"
    return "code"


def role_weight(path: str, is_test: bool, topics: dict[str, bool]) -> float:
    """1 for code and for files whose topic the words asking are about; the role's weight otherwise."""
    role = path_role(path, is_test)
    if role == "code":
        return 1.0
    topic, weight = _ROLES[role]
    return 1.0 if topics[topic] else weight
