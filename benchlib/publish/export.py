"""Exporting one executed notebook as offline HTML that is safe to share: foreign outputs
neutralised, every page through an allow-list sanitizer (bleach), alt text on every image,
warnings left out."""

from __future__ import annotations

import re
import threading
from pathlib import Path

from nbformat import NotebookNode

TEMPLATES = Path(__file__).resolve().parent / "templates"


#: HTML kept in pages (Markdown, pandas tables, highlighted code); the rest is stripped.
ALLOWED_TAGS = frozenset({
    "a", "abbr", "b", "blockquote", "br", "caption", "code", "col", "colgroup", "dd", "del", "div",
    "dl", "dt", "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "img", "kbd", "li", "ol", "p",
    "pre", "s", "samp", "small", "span", "strong", "sub", "sup", "table", "tbody", "td", "tfoot",
    "th", "thead", "tr", "u", "ul",
})


#: Output types rendered in pages: text, tables, Markdown and images; no script, widget or
#: mermaid output (their templates put the data into the page unescaped).
SAFE_MIMETYPES = ("text/plain", "text/html", "text/markdown", "text/latex", "image/png",
                  "image/jpeg", "image/svg+xml")


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


def sanitize_html(markup: object) -> str:
    """``markup`` without script: tags outside :data:`ALLOWED_TAGS` stripped (script and style
    elements with their content), attributes limited by :func:`_allowed_attribute`."""
    import bleach

    text = markup.decode() if isinstance(markup, bytes) else str(markup)
    return bleach.clean(SCRIPT_OR_STYLE.sub("", text), tags=ALLOWED_TAGS,
                        attributes=_allowed_attribute,
                        protocols={"http", "https", "mailto", "data"}, strip=True,
                        strip_comments=True)


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
                   or (k == "alt" and isinstance(v, str))}
            for mime, meta in output["metadata"].items()
            if mime in SAFE_MIMETYPES and isinstance(meta, dict)}


IMAGE_MIMETYPES = ("image/png", "image/jpeg")


HEADING = re.compile(r"^#{1,6}\s+(.+)$", re.MULTILINE)


FIGURE_REPR = re.compile(r"^<Figure size .*>$")


#: A Python warning printed by a library (``.../x.py:12: UserWarning: ...``) and its source line.
WARNING_TEXT = re.compile(r"\b\w*Warning: ")


def _alt_texts(nb: NotebookNode) -> None:
    """Give every image output alt text: its own (set by :func:`benchlib.publish.plots.show`), else its
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


def export_html(notebook: Path, target: Path, include_code: bool) -> Path:
    """Render an executed notebook as a self-contained HTML page (embedded images, no scripts):
    its outputs and Markdown sanitized whoever wrote the notebook."""
    import nbformat
    from nbconvert import HTMLExporter

    nb = neutralise(nbformat.reads(notebook.read_text(encoding="utf-8"), as_version=4))
    _without_warnings(nb)
    _alt_texts(nb)
    key = (include_code, threading.get_ident())
    exporter = _EXPORTERS.get(key)
    if exporter is None:
        exporter = _EXPORTERS[key] = HTMLExporter(
            extra_template_basedirs=[str(TEMPLATES)], template_name="offline",
            exclude_input=not include_code, exclude_input_prompt=True,
            exclude_output_prompt=True, sanitize_html=True, filters={"clean_html": sanitize_html})
    body, _ = exporter.from_notebook_node(nb, resources={"metadata": {"name": notebook.stem}})
    target.write_text(body, encoding="utf-8")
    return target


#: One HTML exporter per thread and kind, made once (making one reads every template).
_EXPORTERS: dict[tuple[bool, int], object] = {}
