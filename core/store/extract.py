"""Text out of HTML and XML documents for `cortex import`: sections with their title and where they start.

The standard library's parsers do this job: `html.parser` reads broken HTML as browsers do (it never raises on bad
markup), and ElementTree over expat (2.4.1 or later, as Python ships it) refuses entity-expansion bombs and never
fetches external entities or DTDs. A heavier HTML library (BeautifulSoup, lxml) would add a dependency for the same
text: only the words between tags are kept, not the layout.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ElementTree
from collections import Counter
from dataclasses import dataclass
from html.parser import HTMLParser

from ..errors import CortexError


@dataclass(frozen=True)
class Section:
    """A titled run of text in a document: what becomes one memory."""

    title: str
    where: str
    """Where it starts: `line 12` (HTML) or `element 3` (XML)."""
    text: str


_SKIPPED = {"script", "style", "template", "noscript", "svg", "head", "title"}
"""Elements whose content is not text a reader sees in the page (`title` is read apart)."""
_BLOCKS = {"p", "div", "br", "li", "tr", "td", "th", "dt", "dd", "pre", "section", "article", "aside", "header",
           "footer", "main", "nav", "blockquote", "table", "ul", "ol", "dl", "hr", "figure", "figcaption", "form"}
_HEADINGS = {f"h{n}" for n in range(1, 7)}
_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
_SPACES = re.compile(r"[ \t\r\f\v]+")


class _HtmlText(HTMLParser):
    """Collects the visible text, split at headings; blocks become line breaks, other whitespace collapses."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.title = ""
        self.sections: list[tuple[str, int, list[str]]] = [("", 1, [])]
        self._skipping: list[str] = []
        self._in_title = False
        self._heading: tuple[int, list[str]] | None = None
        self._pre = 0

    def handle_starttag(self, tag: str, attrs) -> None:
        if tag in _VOID:
            if tag in _BLOCKS and not self._skipping:
                self._text("\n")
            return
        if tag == "title":
            self._in_title = True
        if self._skipping or tag in _SKIPPED:
            self._skipping.append(tag)
            return
        if tag in _HEADINGS:
            self._heading = (self.getpos()[0], [])
        elif tag == "pre":
            self._pre += 1
        if tag in _BLOCKS:
            self._text("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        if self._skipping:
            if tag in self._skipping:
                del self._skipping[self._skipping.index(tag):]
            return
        if tag in _HEADINGS and self._heading is not None:
            line, words = self._heading
            self._heading = None
            title = " ".join("".join(words).split())
            if title:
                self.sections.append((title, line, [f"{'#' * int(tag[1])} {title}\n"]))
        elif tag == "pre":
            self._pre = max(0, self._pre - 1)
        if tag in _BLOCKS:
            self._text("\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
        if self._skipping:
            return
        if self._heading is not None:
            self._heading[1].append(data)
        elif self._pre:
            self._text(data)
        else:
            parts = self.sections[-1][2]
            flowing = _SPACES.sub(" ", data.replace("\n", " "))
            self._text(flowing.lstrip() if not parts or parts[-1].endswith("\n") else flowing)

    def _text(self, text: str) -> None:
        self.sections[-1][2].append(text)


def html_sections(text: str) -> tuple[str, list[Section]]:
    """The document's `<title>` and its sections: the text before the first heading, then one per heading."""
    parser = _HtmlText()
    parser.feed(text)
    parser.close()
    sections = []
    for title, line, parts in parser.sections:
        lines = [line.rstrip() for line in "".join(parts).splitlines()]
        body = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
        if body:
            sections.append(Section(title, f"line {line}", body))
    return " ".join(parser.title.split()), sections


_TITLE_FIELDS = ("title", "name", "id", "key")


def xml_sections(text: str) -> list[Section]:
    """A document of records (a root whose children repeat one tag: the entries of a feed, the rows of a dump) gives
    one section per record, titled by its `title`/`name`/`id` child or attribute, after one for the rest of the
    root's children (a feed's own title); any other document is one section."""
    try:
        root = ElementTree.fromstring(text)
    except ElementTree.ParseError as exc:
        line, column = exc.position
        raise CortexError(f"invalid XML at line {line}, column {column}: {str(exc).split(':')[0]}") from None
    children = [child for child in root if isinstance(child.tag, str)]
    tags = Counter(child.tag for child in children)
    record_tag, count = tags.most_common(1)[0] if tags else ("", 0)
    if count < 2:
        return [Section(_xml_title(root), "root", _xml_text([root]))]
    rest = [child for child in children if child.tag != record_tag]
    sections = [Section(_xml_title(root), "root", _xml_text(rest))]
    for number, element in enumerate(children, 1):
        if element.tag == record_tag:
            sections.append(Section(_xml_title(element), f"element {number}", _xml_text([element])))
    return sections


def _xml_text(elements: list[ElementTree.Element]) -> str:
    return "\n".join(" ".join(part.split()) for element in elements for part in element.itertext() if part.strip())


def _xml_title(element: ElementTree.Element) -> str:
    for name in _TITLE_FIELDS:
        found = next((child for child in element if _local(child.tag) == name), None)
        if found is not None and found.text and found.text.strip():
            return " ".join(found.text.split())
        if element.get(name):
            return element.get(name, "")
    return _local(element.tag)


def _local(tag: object) -> str:
    """A tag without its namespace (`{http://www.w3.org/2005/Atom}title` is `title`)."""
    return str(tag).rsplit("}", 1)[-1]
