"""mkdocs hooks of the documentation site (mkdocs.yml, ``hooks:``).

The overview page, reference/overview.md, is the repository's README.md. Its links are written
relative to the repository root (``docs/tutorial/README.md``), so they are rewritten relative to
the page (``../tutorial/README.md``) before mkdocs checks them; a link to a file outside
``docs/`` is left as written, and the strict build reports it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

OVERVIEW = "reference/overview.md"
_LINK = re.compile(r"(\]\()(?!https?:|mailto:|#)docs/([^)\s]*)(\))")


def readme_for_site(readme: str) -> str:
    """README.md's text with its ``docs/...`` links made relative to reference/overview.md."""
    return _LINK.sub(r"\1../\2\3", readme)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if page.file.src_uri != OVERVIEW:
        return markdown
    root = Path(config.config_file_path).resolve().parent
    return readme_for_site((root / "README.md").read_text(encoding="utf-8"))
