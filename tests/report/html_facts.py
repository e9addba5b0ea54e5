"""What a report page holds, read with the standard library's HTML parser: the elements the tests
count (graph nodes, passes, profile rows, kernel cards, sections) and every URL-like attribute."""
from __future__ import annotations

from html.parser import HTMLParser


class PageFacts(HTMLParser):
    """Collects (tag, attributes, classes, inside an <svg>) for every element of a page."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.elements: list = []
        self.svg_depth = 0
        self.scripts: list = []
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "svg":
            self.svg_depth += 1
        self.elements.append((tag, attrs, set((attrs.get("class") or "").split()), self.svg_depth > 0))
        self._in_script = tag == "script"
        if self._in_script:
            self.scripts.append([attrs, ""])

    def handle_endtag(self, tag):
        if tag == "svg":
            self.svg_depth -= 1
        if tag == "script":
            self._in_script = False

    def handle_data(self, data):
        if self._in_script:
            self.scripts[-1][1] += data

    def having(self, cls: str, tag: str | None = None, in_svg: bool | None = None) -> list:
        """Elements with class `cls` (and `tag`, and inside an svg or not, when given)."""
        return [e for e in self.elements if cls in e[2] and (tag is None or e[0] == tag)
                and (in_svg is None or e[3] == in_svg)]

    def ids(self) -> set:
        return {e[1]["id"] for e in self.elements if "id" in e[1]}


def read_page(path) -> PageFacts:
    facts = PageFacts()
    facts.feed(open(path, encoding="utf-8").read())
    facts.close()
    return facts
