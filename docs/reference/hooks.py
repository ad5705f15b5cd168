"""mkdocs hooks of the documentation site (mkdocs.yml, ``hooks:``).

The site's home page (the page of docs/README.md) is the repository's README.md: what the
stack is, how to install it, the first kernel, the first torch operator. docs/README.md, the
map of the documentation, is shown as reference/overview.md instead. Links are rewritten for
the page they land on before mkdocs checks them: README.md's ``docs/...`` links are relative to
the repository root (``docs/tutorial/README.md`` becomes ``tutorial/README.md``, and
``docs/README.md`` the map's page), docs/README.md's are relative to docs/ (``tutorial/...``
becomes ``../tutorial/...``), and any other page's link to README.md goes to the home page. A
link to another file outside ``docs/`` is left as written, and the strict build reports it.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path, PurePosixPath
from typing import Any

HOME = "README.md"
MAP = "reference/overview.md"
_README_LINK = re.compile(r"(\]\()(?!https?:|mailto:|#)docs/([^)\s]*)(\))")
_DOCS_LINK = re.compile(r"(\]\()(?!https?:|mailto:|#|/)([^)\s]+)(\))")


def _readme_target(match: re.Match[str]) -> str:
    target = match.group(2)
    if target == "README.md" or target.startswith("README.md#"):
        target = MAP + target[len("README.md") :]
    return f"{match.group(1)}{target}{match.group(3)}"


def readme_for_site(readme: str) -> str:
    """README.md's text with its ``docs/...`` links made relative to the home page."""
    return _README_LINK.sub(_readme_target, readme)


def _map_target(match: re.Match[str]) -> str:
    target = match.group(2)
    if not target.startswith("../README.md"):  # the repository's README is the home page
        target = "../" + target
    return f"{match.group(1)}{target}{match.group(3)}"


def map_for_site(text: str) -> str:
    """docs/README.md's text with its links made relative to reference/overview.md (a link to
    the repository's README.md goes to the home page, docs/README.md's page)."""
    return _DOCS_LINK.sub(_map_target, text)


def home_links(markdown: str, page_uri: str) -> str:
    """A page's links to the repository's README.md (``../../README.md`` from tutorial/) made
    links to the home page, which shows it (``../README.md`` from tutorial/)."""
    page_dir = PurePosixPath("docs", page_uri).parent

    def target(match: re.Match[str]) -> str:
        link, _, anchor = match.group(2).partition("#")
        if posixpath.normpath(page_dir / link) != "README.md":
            return match.group(0)
        home = posixpath.relpath(HOME, page_dir.relative_to("docs"))
        return f"{match.group(1)}{home}{'#' + anchor if anchor else ''}{match.group(3)}"

    return _DOCS_LINK.sub(target, markdown)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    root = Path(config.config_file_path).resolve().parent
    if page.file.src_uri == HOME:
        return readme_for_site((root / "README.md").read_text(encoding="utf-8"))
    if page.file.src_uri == MAP:
        return map_for_site((root / "docs" / "README.md").read_text(encoding="utf-8"))
    return home_links(markdown, page.file.src_uri)
