"""The one content security policy of every page the course writes: feedback pages, the overview,
the similarity report. No script, no request, no form, no frame; only inline styles and images and
fonts embedded as data (a notebook's figures). Each page carries it first in its head (`META`), as a
second wall behind the allowlist sanitiser (grader.pipeline.clean_feedback) and the templates'
autoescape: were any script, request or form left, the browser would refuse it."""

from __future__ import annotations

CSP = ("default-src 'none'; style-src 'unsafe-inline'; img-src data:; font-src data:; "
       "form-action 'none'; base-uri 'none'; frame-ancestors 'none'")
META = f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
