"""Turning what a person types into what the indexes understand: words, identifier parts, filters."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from datetime import datetime

from ..errors import CortexError
from ..records import KINDS, PAST_SESSION_TAG, PAST_SESSIONS
from ..text import split_identifier, word_stems

STOP_WORDS = frozenset(
    """a an and are as at be been but by can could did do does for from had has have how i if in into is it its
    me my not of on or our should so than that the their them then there these they this to too was we were what
    when where which who why will with would you your about after before all also any just more most no only other
    some such up use used using via""".split()
)
QUESTION_WORDS = frozenset(
    """implemented implementation implement implements defined definition define declared declaration code
    codebase function functions method methods logic""".split()
)
"""Words that say how a question is asked of code, not what it is about ("where is the reloader implemented",
"which function defines ..."): every function is code, so they would match everything full-text search holds."""
_TOKEN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-/]*")
_FILTER = re.compile(r"\b(kind|tag|file|branch|since|key):(\S+)")
MAX_QUERY_CHARS = 2000


@dataclass(frozen=True)
class ParsedQuery:
    """A query split into the words full-text search gets and the text the embedding model gets."""

    raw: str
    text: str
    """What is embedded: the query with filters removed, capped in length."""
    terms: tuple[str, ...]
    """Words for full-text search: whole tokens and the parts of compound identifiers, stop words removed."""
    identifiers: tuple[str, ...] = field(default=())
    """Tokens that look like code (`getUserById`, `parse_config`, `http.client`)."""

    @property
    def empty(self) -> bool:
        return not self.terms and not self.text.strip()


def _tokens(text: str) -> list[str]:
    """The query's tokens (words, identifiers, dotted names, paths) without leading or trailing dots, dashes and
    slashes."""
    return [token for m in _TOKEN.finditer(text) if (token := m.group(0).strip(".-/"))]


def _pieces(token: str) -> list[str]:
    """A token's parts between dots, slashes and dashes: `flask/json/tag.py` -> flask, json, tag, py."""
    return [p for p in re.split(r"[./\-]", token) if p]


def parse_query(raw: str) -> ParsedQuery:
    text = " ".join(raw.split())[:MAX_QUERY_CHARS]
    terms: list[str] = []
    idents: list[str] = []
    for token in _tokens(text):
        pieces = _pieces(token)
        compound = len(pieces) > 1 or _compound(token)
        if compound:
            idents.append(token)
        for piece in pieces:
            lower = piece.lower()
            parts = split_identifier(piece)
            if _says_something(lower) or compound:
                terms.append(lower)
            if len(parts) > 1:
                terms.extend(p for p in parts if p not in STOP_WORDS)
    return ParsedQuery(raw=raw, text=text, terms=tuple(dict.fromkeys(terms)), identifiers=tuple(dict.fromkeys(idents)))


def _says_something(lower: str) -> bool:
    """A lower-cased word that is neither a stop word nor a word about how a question is asked."""
    return lower not in STOP_WORDS and lower not in QUESTION_WORDS


def _compound(token: str) -> bool:
    """A snake_case or camelCase identifier (`parse_cookie`, `getUserById`): a name, not a word."""
    return "_" in token or re.search(r"[a-z][A-Z]", token) is not None


QUESTION_OPENERS = frozenset("how where what which who why".split())
"""Words that open a question. Others do only with a question mark: "When the URL has a slash, match fails" and
"Do not strip ..." are a report and a task."""
MAX_QUESTION_WORDS = 15


def said_words(text: str) -> frozenset[str]:
    """The plain words a question says, lower-cased: not parts of a compound identifier (`parse_cookie` asks for
    that name, not for `parse`), not stop or question words, three letters or more. Only a short question (up to
    `MAX_QUESTION_WORDS` words, opened by a question word or ended by `?`) has them: it names the operation it asks
    about, where a task or a fix's description names many definitions in passing (on every 3rd dev task the same
    signal moved three fixes' right chunk down a place or two and lifted none)."""
    tokens = _tokens(text)
    asked = bool(tokens) and (tokens[0].lower() in QUESTION_OPENERS or text.rstrip().endswith("?"))
    if not asked or len(tokens) > MAX_QUESTION_WORDS:
        return frozenset()
    out = set()
    for word in tokens:
        lower = word.lower()
        if word.isalpha() and not _compound(word) and len(word) > 2 and _says_something(lower):
            out.add(lower)
    return frozenset(out)


def file_naming_stems(text: str) -> frozenset[str]:
    """The stems of the words that may name a file: a plain word (`reloader` -> `_reloader.py`) and each part of a
    path or dotted name (`flask/json/tag.py`; `View.dispatch_request` -> `views.py`). A camelCase or snake_case name
    names only a file that bears it whole (`multipart_parser` -> `multipart_parser.py`, `userStore` -> `userStore.js`):
    its parts belong to the definition asked for (`FastifyScehma` is not about `fastify.js`, nor `wrtieCommands` about
    `command.go`). Stop and question words name no file."""
    words = []
    for token in _tokens(text):
        for piece in _pieces(token):
            if _compound(piece.strip("_")):
                words.append(joined_name(piece))
            elif _says_something(piece.lower()):
                words.append(piece)
    return word_stems(" ".join(words))


def joined_name(name: str) -> str:
    """A name with its separators dropped, lower-cased: `multipart_parser` and `multipart-parser` ->
    `multipartparser`, as `userStore` -> `userstore`."""
    return re.sub(r"[_\-]", "", name).lower()


_CAMEL_WORD = re.compile(r"\b[A-Z][a-z]+[A-Z]\w*\b|\b\w+_\w+\b")
_QUOTED = re.compile(r"`+([^`\s]+?)`+")


def code_names(text: str) -> frozenset[str]:
    """Names a text gives in code form, as written: compound and dotted identifiers (`parse_cookie`,
    `MapAdapter.match`, `getUserById`), the last part of each dotted one, and anything quoted in backticks; a
    query that is one identifier-like word (`Engine`, `ParseFlags`) is a name too."""
    parsed = parse_query(text[:20000])
    out = set(parsed.identifiers)
    out |= {t.rsplit(".", 1)[-1] for t in parsed.identifiers}
    out |= set(_CAMEL_WORD.findall(text[:20000]))
    out |= set(_QUOTED.findall(text[:20000]))
    words = text.split()
    if len(words) == 1 and re.fullmatch(r"[A-Za-z_][\w.]*", words[0]):
        out.add(words[0])
    return frozenset(w.strip("()").strip(".") for w in out if len(w.strip("()")) > 2)


@dataclass(frozen=True)
class Filters:
    """Narrowing of a search; empty means everything."""

    kinds: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    branch: str | None = None
    since: datetime | None = None
    memories_only: bool = False
    code_only: bool = False
    history: bool = False
    """Include superseded and deleted versions."""
    session: str | None = None
    """The reader's session: its session memories are shown, other sessions' are not (`all`: every session's;
    None: a read in no session, which shows none). See core/store/sessions.py."""
    keys: tuple[str, ...] = ()
    """Memories stored under these keys (`--key`); one ending in `*` keeps every key it begins."""
    required_tags: tuple[str, ...] = ()
    """Memories with every one of these tags."""
    without_tags: tuple[str, ...] = ()
    """Memories with none of these tags (code is not narrowed by it)."""

    def narrows(self) -> bool:
        """Whether these filters keep only part of what a search would find."""
        return bool(self.kinds or self.tags or self.required_tags or self.files or self.branch or self.since
                    or self.memories_only or self.code_only or self.keys)

    def past_sessions(self, mode: str) -> Filters:
        """These filters for one way of treating imported past sessions (`PAST_SESSIONS`): `mixed` leaves them as
        they are; `only` keeps the sessions' turns; `without` and `beside` (whose second list is `only`) leave
        them out."""
        if mode not in PAST_SESSIONS:
            raise CortexError(f"past sessions go {', '.join(PAST_SESSIONS)}, not {mode!r}")
        if mode == "only":
            return replace(self, required_tags=(*self.required_tags, PAST_SESSION_TAG), memories_only=True,
                           code_only=False)
        if mode in ("without", "beside"):
            return replace(self, without_tags=(*self.without_tags, PAST_SESSION_TAG))
        return self

    def __post_init__(self) -> None:
        for kind in self.kinds:
            if kind not in KINDS:
                raise CortexError(f"unknown kind {kind!r}; choose one of {', '.join(KINDS)}")
        if self.memories_only and self.code_only:
            raise CortexError("--memories-only and --code-only exclude each other")


def split_inline_filters(raw: str) -> tuple[str, dict[str, list[str]]]:
    """The dashboard's short syntax: `kind:decision file:src/app.py since:7d key:deploy/* retry logic`."""
    found: dict[str, list[str]] = {}
    for key, value in _FILTER.findall(raw):
        found.setdefault(key, []).append(value)
    return _FILTER.sub(" ", raw).strip(), found
