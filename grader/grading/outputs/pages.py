"""The pages grading writes for the instructor (the overview, the similarity report): Jinja2
templates in grader/grading/outputs/templates/, every value shown as `grader.safe_text.for_page`
makes it (control characters and line breaks escaped) and autoescaped, each page carrying one content
policy that allows no script and no request (grader.page_policy, the policy of every page the course writes)."""

from __future__ import annotations

from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from grader.page_policy import META
from grader.safe_text import for_page

_PAGES = Environment(loader=FileSystemLoader(Path(__file__).parent / "templates"), autoescape=True,
                     undefined=StrictUndefined, keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True,
                     finalize=for_page)


def write(template: str, path: Path, **values) -> Path:
    """Render `template` with `values` (and the policy) to `path`; return the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(_PAGES.get_template(template).render(csp_meta=META, **values), encoding="utf-8")
    return path
