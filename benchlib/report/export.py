"""Exporting one executed notebook as offline HTML that is safe to share: foreign outputs
neutralised, every page through an allow-list sanitizer (nh3, the bindings of the Rust
``ammonia`` sanitizer), alt text on every image,
warnings left out.

A page is rendered here, cell by cell, into one precompiled Jinja2 template
(``templates/offline/page.html.j2``) with its styles inline: Markdown through nbconvert's
mistune renderer, code through pygments, each output by its type, and everything that is HTML
sanitized. The rendered Markdown cells and code (the same in every run of a notebook) are kept
per process, so a report of many runs renders each of them once.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from markupsafe import Markup, escape
from nbformat import NotebookNode

from benchlib.publish import local_paths, templating

TEMPLATES = templating.TEMPLATES  #: the offline shell and styles under it


#: HTML kept in pages (Markdown, pandas tables, highlighted code); the rest is stripped.
ALLOWED_TAGS = frozenset({
    "a", "abbr", "b", "blockquote", "br", "caption", "code", "col", "colgroup", "dd", "del",
    "details", "div", "dl", "dt", "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "img", "kbd",
    "li", "ol", "p", "pre", "s", "samp", "small", "span", "strong", "sub", "summary", "sup",
    "table", "tbody", "td", "tfoot", "th", "thead", "tr", "u", "ul",
})


#: Output types rendered in pages: text, tables, Markdown and images; no script, widget or
#: mermaid output (their templates put the data into the page unescaped).
SAFE_MIMETYPES = ("text/plain", "text/html", "text/markdown", "text/latex", "image/png",
                  "image/jpeg", "image/svg+xml")


#: Base64 text and nothing else (an image's data, placed in an attribute as it is).
BASE64 = re.compile(r"[A-Za-z0-9+/]+={0,2}")
DATA_IMAGE = re.compile(r"data:image/(png|jpeg|gif|svg\+xml);base64,[A-Za-z0-9+/=\s]*", re.IGNORECASE)


TEXT_ALIGN = re.compile(r"\s*text-align:\s*(left|right|center)\s*;?\s*", re.IGNORECASE)


NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


SCRIPT_OR_STYLE = re.compile(r"<(script|style)\b.*?</\1\s*>", re.IGNORECASE | re.DOTALL)


def _allowed_attribute(tag: str, name: str, value: str) -> bool:
    """Whether an attribute survives sanitizing: no event handlers, links to http(s), mailto or
    within the report, images only as embedded data."""
    compact = re.sub(r"[\x00-\x20]", "", value).lower()
    if name in ("class", "id", "title"):
        return True
    if name == "href":
        return tag == "a" and not compact.startswith("data:")
    if name == "src":
        return tag == "img" and bool(DATA_IMAGE.fullmatch(value.strip()))
    if name in ("colspan", "rowspan", "border", "width", "height", "start"):
        return value.strip().isdigit()
    if name == "alt":
        return tag == "img"
    return name == "style" and bool(TEXT_ALIGN.fullmatch(value))


#: Attributes a tag may keep (``*``: any allowed tag), each value checked by
#: :func:`_allowed_attribute`.
ATTRIBUTES = {"*": {"class", "id", "title", "colspan", "rowspan", "border", "width", "height",
                    "start", "style"}, "a": {"href"}, "img": {"src", "alt"}}


def _kept_value(tag: str, name: str, value: str) -> str | None:
    return value if _allowed_attribute(tag, name, value) else None


@functools.cache
def _cleaner() -> object:
    """One sanitizer for the process (immutable, shared by threads)."""
    import nh3

    return nh3.Cleaner(tags=set(ALLOWED_TAGS), attributes=ATTRIBUTES, attribute_filter=_kept_value,
                       url_schemes={"http", "https", "mailto", "data"}, strip_comments=True,
                       link_rel=None)


def sanitize_html(markup: object) -> str:
    """``markup`` without script: tags outside :data:`ALLOWED_TAGS` stripped (script and style
    elements with their content), attributes limited by :data:`ATTRIBUTES` and
    :func:`_allowed_attribute`, links to http(s), mailto or within the report."""
    text = markup.decode() if isinstance(markup, bytes) else str(markup)
    return _cleaner().clean(SCRIPT_OR_STYLE.sub("", text))


def _safe_output(output: dict) -> None:
    """Keep an output's safe data types and its plain image size / background / alt metadata
    (the template escapes the alt text)."""
    if "data" in output:
        output["data"] = {k: v for k, v in output["data"].items() if k in SAFE_MIMETYPES}
    if "metadata" in output:
        output["metadata"] = {
            mime: {k: v for k, v in meta.items()
                   if (k in ("width", "height") and isinstance(v, int | float)
                       and not isinstance(v, bool))
                   or (k == "needs_background" and v in ("light", "dark"))
                   or (k == "unconfined" and isinstance(v, bool))
                   or (k == "alt" and isinstance(v, str))
                   or (k == "narrow" and isinstance(v, str) and BASE64.fullmatch(v) is not None)}
            for mime, meta in output["metadata"].items()
            if mime in SAFE_MIMETYPES and isinstance(meta, dict)}


IMAGE_MIMETYPES = ("image/png", "image/jpeg")


HEADING = re.compile(r"^#{1,6}\s+(.+)$", re.MULTILINE)


FIGURE_REPR = re.compile(r"^<Figure size .*>$")


#: A Python warning printed by a library (``.../x.py:12: UserWarning: ...``) and its source line.
WARNING_TEXT = re.compile(r"\b\w*Warning: ")


def _alt_texts(nb: NotebookNode) -> None:
    """Give every image output alt text: its own (set by :func:`benchlib.publish.pages.plots.show`), else its
    plain-text representation when that says something, else the heading above it."""
    heading = "Figure"
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "markdown":
            found = HEADING.findall(str(cell.get("source", "")))
            heading = found[-1].strip() if found else heading
            continue
        for output in cell.get("outputs", []):
            data, metadata = output.get("data", {}), output.setdefault("metadata", {})
            for mime in IMAGE_MIMETYPES:
                if mime not in data:
                    continue
                meta = metadata.setdefault(mime, {})
                if isinstance(meta, dict) and not (isinstance(meta.get("alt"), str) and meta["alt"]):
                    text = " ".join(str(data.get("text/plain", "")).split())
                    meta["alt"] = (text if text and not FIGURE_REPR.match(text)
                                   else f"Plot: {heading}")


def _without_warnings(nb: NotebookNode) -> int:
    """Drop library warnings printed on stderr (they are in the notebook file, not worth a
    reader's attention in the page); how many outputs were dropped."""
    dropped = 0
    for cell in nb.get("cells", []):
        outputs = cell.get("outputs")
        if not outputs:
            continue
        kept = [o for o in outputs if not (o.get("output_type") == "stream"
                                           and o.get("name") == "stderr"
                                           and WARNING_TEXT.search(str(o.get("text", ""))))]
        dropped += len(outputs) - len(kept)
        cell["outputs"] = kept
    return dropped


def neutralise(nb: NotebookNode) -> NotebookNode:
    """A notebook read from anywhere, made safe for the templates: notebook metadata reduced to
    the language, cell ids and tags to plain names, outputs to :data:`SAFE_MIMETYPES`."""
    language = nb.get("metadata", {}).get("language_info", {}).get("name", "python")
    nb["metadata"] = {"language_info": {"name": language if NAME.fullmatch(str(language))
                                        else "python"}}
    for index, cell in enumerate(nb.get("cells", [])):
        if "id" in cell and not NAME.fullmatch(str(cell["id"])):
            cell["id"] = f"cell-{index}"
        metadata = cell.get("metadata", {})
        if "tags" in metadata:
            metadata["tags"] = [t for t in metadata["tags"] if NAME.fullmatch(str(t))]
        if "outputs" in cell:
            for output in cell["outputs"]:
                _safe_output(output)
            cell["outputs"] = [o for o in cell["outputs"] if o.get("data", True)]  # none left
    return nb


#: Output types in the order a page prefers them when an output has several.
PRIORITY = ("text/html", "text/markdown", "image/svg+xml", "text/latex", "image/png",
            "image/jpeg", "text/plain")
CSS_COMMENT = re.compile(r"\s*/\*.*?\*/", re.DOTALL)
#: Text a later carriage return overwrote (progress bars), as a terminal shows it.
OVERWRITTEN = re.compile(r".*\r(?=[^\n])")


@dataclass(frozen=True)
class Output:
    """One rendered output: its CSS classes, MIME type and (safe) HTML."""

    classes: str
    mime: str
    html: Markup


@dataclass(frozen=True)
class Cell:
    """One rendered cell: its kind (``CodeCell``, ...), input HTML (None: not shown), outputs."""

    kind: str
    input: Markup | None
    outputs: tuple[Output, ...]


@functools.lru_cache(maxsize=1024)
def _markdown(source: str) -> Markup:
    """Markdown as sanitized HTML (kept: every run of a notebook has the same Markdown cells)."""
    from nbconvert.filters.markdown_mistune import markdown2html_mistune

    return Markup(sanitize_html(markdown2html_mistune(source)))


@functools.lru_cache(maxsize=1024)
def _code(source: str, language: str) -> Markup:
    """Code highlighted by pygments (its text escaped, its markup only spans with classes)."""
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import get_lexer_by_name
    from pygments.util import ClassNotFound

    try:
        lexer = get_lexer_by_name("ipython3" if language == "python" else language)
    except ClassNotFound:
        lexer = get_lexer_by_name("text")
    return Markup(highlight(source, lexer, HtmlFormatter(cssclass="highlight")))


def _image(mime: str, data: str, meta: Mapping[str, object]) -> Markup:
    """An ``<img>``; with a phone rendering (``narrow`` metadata, a PNG), a ``<picture>`` that
    offers it to screens up to 640 px (:mod:`benchlib.publish.pages.narrow`)."""
    size = "".join(Markup(' {}="{}"').format(k, meta[k]) for k in ("width", "height") if k in meta)
    image = Markup('<img src="data:{};base64,{}" alt="{}"{}>').format(
        mime, "".join(str(data).split()), meta.get("alt", "figure"), Markup(size))
    if not isinstance(meta.get("narrow"), str) or size:
        return image
    return Markup('<picture><source media="(max-width: 640px)" srcset="data:image/png;base64,{}">'
                  '{}</picture>').format(meta["narrow"], image)


def _data(output: Mapping) -> Output | None:
    """A display_data or execute_result output by its preferred type."""
    data = output.get("data", {})
    mime = next((m for m in PRIORITY if m in data), None)
    if mime is None:
        return None
    value = data[mime]
    if mime in ("text/html", "image/svg+xml"):
        return Output("jp-RenderedHTMLCommon jp-RenderedHTML", mime, Markup(sanitize_html(value)))
    if mime == "text/markdown":
        return Output("jp-RenderedHTMLCommon jp-RenderedMarkdown jp-MarkdownOutput", mime,
                      _markdown(str(value)))
    if mime == "text/latex":
        return Output("jp-RenderedLatex", mime, escape(value))
    if mime.startswith("image/"):
        meta = output.get("metadata", {}).get(mime, {})
        return Output("jp-RenderedImage", mime, _image(mime, value, meta))
    return Output("jp-RenderedText", mime, _pre(str(value)))


def _pre(text: str) -> Markup:
    from nbconvert.filters.ansi import ansi2html

    return Markup("<pre>{}</pre>").format(Markup(ansi2html(text)))


def _outputs(outputs: list) -> tuple[Output, ...]:
    """A code cell's outputs, consecutive streams of one name joined (as nbconvert does)."""
    shown, stream = [], None
    for output in outputs:
        kind = output.get("output_type")
        if kind == "stream":
            if stream is not None and stream[0] == output.get("name"):
                stream[1].append(str(output.get("text", "")))
                continue
            stream = (output.get("name"), [str(output.get("text", ""))])
            shown.append(stream)
            continue
        stream = None
        if kind == "error":
            shown.append(Output("jp-RenderedText", "application/vnd.jupyter.stderr",
                                _pre("\n".join(map(str, output.get("traceback", []))))))
        elif kind in ("display_data", "execute_result"):
            shown.append(_data(output))
    return tuple(
        Output("jp-RenderedText", f"application/vnd.jupyter.{item[0]}",
               _pre(OVERWRITTEN.sub("", "".join(item[1]))))
        if isinstance(item, tuple) else item for item in shown if item is not None)


#: The cell tag (Jupyter Book's) whose code a page leaves out, its outputs kept: a benchmark
#: notebook's configuration cell (its table shows what its 30 lines of ``name=name,`` say).
HIDE_INPUT = "hide-input"
#: The cell tag (Jupyter Book's) of a cell for whoever runs the notebook, left out of its page
#: (a summary's "Run by `benchlib report ...` or open it in JupyterLab": not for the reader).
REMOVE_CELL = "remove-cell"


def _cells(nb: NotebookNode, include_code: bool) -> list[Cell]:
    language = nb["metadata"]["language_info"]["name"]
    cells = []
    for cell in nb["cells"]:
        source = str(cell.get("source", ""))
        kind = cell.get("cell_type")
        if REMOVE_CELL in (cell.get("metadata", {}).get("tags") or []):
            continue
        if kind == "markdown":
            cells.append(Cell("MarkdownCell", _markdown(source), ()))
        elif kind == "raw":
            if str(cell.get("metadata", {}).get("raw_mimetype", "")).lower() in ("", "text/html"):
                cells.append(Cell("RawCell", Markup(sanitize_html(source)), ()))
        elif kind == "code":
            hidden = HIDE_INPUT in (cell.get("metadata", {}).get("tags") or [])
            shown = _code(source, language) if include_code and not hidden else None
            outputs = _outputs(cell.get("outputs", []))
            if shown is not None or outputs:
                cells.append(Cell("CodeCell", shown, outputs))
    return cells


@functools.cache
def _template() -> object:
    """The page template, compiled once per process, and the page's styles."""
    import jinja2
    from pygments.formatters import HtmlFormatter

    folder = TEMPLATES / "offline"
    environment = jinja2.Environment(loader=jinja2.FileSystemLoader(folder), autoescape=True)
    css = "\n".join([(folder / "notebook.css").read_text(encoding="utf-8"),
                     CSS_COMMENT.sub("", HtmlFormatter(style="default").get_style_defs(".highlight")),
                     (folder / "page.css").read_text(encoding="utf-8")])
    return environment.get_template("page.html.j2"), Markup(css)


def export_html(notebook: Path, target: Path, include_code: bool, nav: str = "",
                run_page: bool = False) -> Path:
    """Render an executed notebook as a self-contained HTML page (embedded images, inline
    styles, no scripts): its outputs and Markdown sanitized whoever wrote the notebook. A file
    that is not a valid notebook raises (``nbformat.ValidationError``, ...).

    ``nav``: the report's navigation bar (:mod:`benchlib.report.navigation`, HTML built by
    benchlib), first on the page. A ``run_page`` opens with what was measured and the
    parameters the run was given (:mod:`benchlib.report.run_lead`), and leaves out the
    notebook's parameter cells (its defaults, and the given ones the lead shows)."""
    import nbformat

    nb = nbformat.reads(notebook.read_text(encoding="utf-8"), as_version=4)
    lead = Markup("")
    if run_page:
        from benchlib.report import run_lead

        lead = run_lead.lead(nb, notebook.stem)  # before neutralise: it drops the record
        run_lead.without_parameter_cells(nb)
    nb = neutralise(nb)
    nbformat.validate(nb, relax_add_props=True)
    _without_warnings(nb)
    _alt_texts(nb)
    template, css = _template()
    heading = _heading(nb)
    title = (f"{notebook.stem}: {heading}" if run_page and heading else heading or notebook.stem)
    page = template.render(title=title, css=css, nav=Markup(nav), lead=lead,
                           cells=_cells(nb, include_code))
    target.write_text(local_paths.scrub(page, local_paths.builder_root()), encoding="utf-8")
    return target


def _heading(nb: object) -> str:
    """The notebook's first Markdown heading as plain text (the browser tab's title), or ''."""
    for cell in nb.cells:  # type: ignore[attr-defined]
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.startswith("# "):
                    return " ".join(line[2:].replace("`", "").split())[:120]
            return ""
    return ""
