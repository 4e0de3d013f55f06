"""Feedback step: everything a submission controls made into inert content before the page is built.

`CleanFeedbackCells` takes the place of nbconvert's SanitizeHTML in the feedback pipeline. It keeps
an allowlist, never a blocklist: each cell keeps only its nbgrader metadata (which the gradebook
restored) and its source; each output keeps only text, errors, images and HTML; every piece of HTML
(an output's `text/html`, a raw cell, and, at render time, each markdown cell:
`grader.pipeline.safe_feedback_page`) goes through `clean_html`, the nh3 (Ammonia) sanitiser with
the tags, attributes and URLs listed below, and nothing else, every class and id prefixed with
`student-` so that none takes the page's own style or anchors. So the page holds no script, style,
link, form, frame, meta refresh, remote resource or `data:` document from a student, whatever the
markup. Images are decoded and encoded again (Pillow), as 256-colour PNGs, with their width and
height as integers; an image that does not decode, or is over `MAX_PIXELS`, is replaced by a note.

Equations (`$...$`, `$$...$$`, `\\begin{...}` in markdown, `text/latex` outputs) become MathML
(`latex2mathml`), which browsers draw without a script or a network: the page stays script-free.
"""

from __future__ import annotations

import base64
import binascii
import html
import io
import re

import nh3
from latex2mathml.converter import convert as latex_to_mathml
from nbconvert.preprocessors import Preprocessor
from nbformat import NotebookNode

# A bound against decompression bombs, not a setting: every lesson figure is far below it.
MAX_PIXELS = 4_000_000  # an image over this many pixels is not shown (a decompression bomb, or no figure)
IMAGE_TYPES = ("image/png", "image/jpeg")
KEPT_TYPES = ("text/plain", "text/html", "text/markdown", "text/latex", *IMAGE_TYPES)
NOT_SHOWN = "[an output of a kind the feedback page does not show]"
MATHML = "http://www.w3.org/1998/Math/MathML"

MATHML_TAGS = {"math", "mi", "mn", "mo", "ms", "mtext", "mspace", "mrow", "mfrac", "msqrt", "mroot", "mstyle",
               "merror", "mpadded", "mphantom", "mfenced", "menclose", "msub", "msup", "msubsup", "munder", "mover",
               "munderover", "mmultiscripts", "mprescripts", "none", "mtable", "mtr", "mtd", "mlabeledtr",
               "semantics", "annotation"}
HTML_TAGS = {"a", "abbr", "b", "blockquote", "br", "caption", "code", "dd", "del", "details", "div", "dl", "dt", "em",
             "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "img", "ins", "kbd", "li", "mark", "ol", "p", "pre", "q",
             "s", "samp", "small", "span", "strong", "sub", "summary", "sup", "table", "tbody", "td", "tfoot", "th",
             "thead", "tr", "u", "ul", "var"}
ATTRIBUTES = {
    "*": {"class", "id", "title", "lang", "dir"},
    "a": {"href"},
    "img": {"src", "alt", "width", "height"},
    "td": {"colspan", "rowspan", "align"},
    "th": {"colspan", "rowspan", "align", "scope"},
    "ol": {"start"},
    "math": {"display", "xmlns"},
    "mo": {"fence", "separator", "stretchy", "symmetric", "lspace", "rspace", "form", "largeop", "movablelimits",
           "minsize", "maxsize", "accent"},
    "mi": {"mathvariant"}, "mn": {"mathvariant"}, "mtext": {"mathvariant"},
    "mstyle": {"displaystyle", "scriptlevel", "mathvariant"},
    "mspace": {"width", "height", "depth"},
    "mfrac": {"linethickness"},
    "mover": {"accent"}, "munder": {"accentunder"}, "munderover": {"accent", "accentunder"},
    "mtable": {"columnalign", "rowspacing", "columnspacing", "displaystyle"},
    "mtd": {"columnalign", "columnspan", "rowspan"},
    "menclose": {"notation"},
    "annotation": {"encoding"},
}
LINK = re.compile(r"(?i)^(?:#[^\s]*|https?://[^\s]+|mailto:[^\s]+)$")  # what a link may point to
INLINE_IMAGE = re.compile(r"^data:image/(?:png|jpeg|gif);base64,[A-Za-z0-9+/=\s]+$")  # all an image may show
SIZE = re.compile(r"^\d{1,5}$")
# The prefix of every class and id in content a submission controls: none of the page's own styles applies
# to it and none of its anchors is taken over (a student's `class="panel-heading"` is `student-panel-heading`).
STUDENT = "student-"


def _attribute(tag: str, name: str, value: str) -> str | None:
    """nh3's attribute filter: links to anchors and web pages only, images inline only, sizes as numbers;
    every class and id, and every link to an anchor, given the prefix STUDENT (see `clean_html`)."""
    if name == "class":
        return " ".join(STUDENT + part for part in value.split()) or None
    if name == "id":
        return STUDENT + value.strip() if value.strip() else None
    if tag == "a" and name == "href":
        value = value.strip()
        if value.startswith("#") and len(value) > 1:
            value = f"#{STUDENT}{value[1:]}"
        return value if LINK.match(value) else None
    if tag == "img" and name == "src":
        return value if INLINE_IMAGE.match(value.strip()) else None
    if name in ("width", "height") and tag == "img":
        return value if SIZE.match(value.strip()) else None
    return value


def clean_html(fragment: str) -> str:
    """`fragment` with only the allowlisted tags, attributes and URLs left; everything else removed or escaped.

    Every class and id gets the prefix STUDENT, and every link to an anchor of the page with it, so that a
    student's own anchors still work and no markup of theirs looks like, or stands for, the grader's."""
    return nh3.clean(fragment, tags=HTML_TAGS | MATHML_TAGS, attributes=ATTRIBUTES, attribute_filter=_attribute,
                     clean_content_tags={"script", "style", "template", "textarea", "title", "noscript", "xmp"},
                     url_schemes={"http", "https", "mailto", "data"}, strip_comments=True,
                     link_rel="noopener noreferrer nofollow")


def math(tex: str, *, display: bool) -> str:
    """The TeX `tex` as MathML, or as escaped TeX where it cannot be converted."""
    try:
        mathml = latex_to_mathml(tex, display="block" if display else "inline")
    except Exception:  # a formula the converter does not know: shown as its source
        delimiter = "$$" if display else "$"
        return f"<code>{html.escape(delimiter + tex + delimiter)}</code>"
    # In an HTML page <math> needs no namespace, and inline is its default: bytes saved on every equation.
    return clean_html(mathml).replace(f' xmlns="{MATHML}"', "").replace(' display="inline"', "", 1)


def reencoded(data: object, mime: str) -> str | None:
    """The base64 image `data` decoded and written again as a 256-colour PNG, or None if it is no such image."""
    from PIL import Image

    if not isinstance(data, str):
        return None
    try:
        raw = base64.b64decode(data.replace("\n", ""), validate=True)
        with Image.open(io.BytesIO(raw), formats=["PNG" if mime == "image/png" else "JPEG"]) as image:
            if image.width * image.height > MAX_PIXELS:
                return None
            image.load()
            rgb = image.convert("RGB")
        out = io.BytesIO()
        rgb.quantize(256, method=Image.Quantize.FASTOCTREE).save(out, format="PNG", compress_level=6)
    except (binascii.Error, ValueError, OSError, Image.DecompressionBombError, SyntaxError):
        return None
    return base64.b64encode(out.getvalue()).decode("ascii")


def _size(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 < value < 100_000 else None


def _text(value: object) -> str:
    if isinstance(value, list):
        return "".join(str(item) for item in value)
    return value if isinstance(value, str) else ""


def clean_output(output: NotebookNode) -> NotebookNode:
    """One output with only what the page may show: text, errors, cleaned HTML, re-encoded images."""
    kind = output.get("output_type")
    if kind == "stream":
        name = output.get("name") if output.get("name") in ("stdout", "stderr") else "stdout"
        return NotebookNode(output_type="stream", name=name, text=_text(output.get("text")))
    if kind == "error":
        traceback = output.get("traceback")
        return NotebookNode(output_type="error", ename=_text(output.get("ename")), evalue=_text(output.get("evalue")),
                            traceback=[_text(line) for line in traceback] if isinstance(traceback, list) else [])
    data, metadata = output.get("data") if isinstance(output.get("data"), dict) else {}, NotebookNode()
    kept = NotebookNode()
    for mime in KEPT_TYPES:
        if mime not in data:
            continue
        if mime in IMAGE_TYPES:
            image = reencoded(data[mime], mime)
            if image is None:
                kept.setdefault("text/plain", "[an image that could not be shown]")
                continue
            kept["image/png"] = image
            sizes = output.get("metadata", {}).get(mime) if isinstance(output.get("metadata"), dict) else None
            sizes = sizes if isinstance(sizes, dict) else {}
            size = {key: n for key in ("width", "height") if (n := _size(sizes.get(key))) is not None}
            if size:
                metadata["image/png"] = NotebookNode(size)
        elif mime == "text/html":
            kept["text/html"] = clean_html(_text(data[mime]))
        elif mime == "text/latex" and "text/html" not in data:
            tex = _text(data[mime]).strip().strip("$")
            kept["text/html"] = math(tex, display=True)
        elif mime in ("text/plain", "text/markdown"):
            kept[mime] = _text(data[mime])
    if not kept:
        kept["text/plain"] = NOT_SHOWN
    made = NotebookNode(output_type="execute_result" if kind == "execute_result" else "display_data",
                        data=kept, metadata=metadata)
    if kind == "execute_result":
        made["execution_count"] = output.get("execution_count")
    return made


class CleanFeedbackCells(Preprocessor):
    """Feedback step: each cell and output reduced to what the page may show, its HTML through `clean_html`."""

    enabled = True  # nbgrader registers its pipelines' steps without enabling them

    def preprocess(self, nb, resources):
        info = nb.metadata.get("language_info", {})
        nb.metadata = NotebookNode(
            kernelspec=NotebookNode(name="python3", display_name="Python 3", language="python"),
            language_info=NotebookNode(name="python", pygments_lexer="ipython3") if isinstance(info, dict)
            else NotebookNode(name="python"))
        return super().preprocess(nb, resources)

    def preprocess_cell(self, cell, resources, index):
        grading = cell.metadata.get("nbgrader")
        cell.metadata = NotebookNode({"nbgrader": grading} if isinstance(grading, dict) else {})
        if cell.cell_type == "raw":
            cell.source = clean_html(_text(cell.source))
        if cell.cell_type == "markdown" and isinstance(cell.get("attachments"), dict):
            cell.attachments = NotebookNode({
                name: NotebookNode({"image/png": image}) for name, bundle in cell.attachments.items()
                if isinstance(bundle, dict) and (image := next(
                    (reencoded(bundle[m], m) for m in IMAGE_TYPES if m in bundle), None)) is not None})
        if cell.cell_type == "code":
            cell.outputs = [clean_output(output) for output in cell.get("outputs", []) if isinstance(output, dict)]
        return cell, resources
