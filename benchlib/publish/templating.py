"""The HTML of the report's tables and index page, from Jinja2 templates
(``benchlib/publish/templates/pages/``) in one environment with autoescape on: every value is
escaped unless it is passed as :class:`markupsafe.Markup` (only HTML built here, never record
text)."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from pathlib import Path

import jinja2
from markupsafe import Markup

#: The templates: ``pages/`` (this environment's) and ``offline/`` (a page's shell and styles).
TEMPLATES = Path(__file__).resolve().parent / "templates"


@cache
def environment() -> jinja2.Environment:
    """The one environment: package templates, autoescape, undefined names an error, the
    ``words`` filter."""
    env = jinja2.Environment(loader=jinja2.PackageLoader("benchlib.publish", "templates/pages"),
                             autoescape=True, undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True)
    env.filters["words"] = words
    return env


def words(value: object) -> str:
    """``value`` as text on one line (runs of white space one space), for the ``words`` filter."""
    return " ".join(str(value).split())


def render(template: str, /, **values: object) -> str:
    """Template ``template`` rendered with ``values`` (escaped unless Markup)."""
    return environment().get_template(template).render(**values)


def macro(template: str, name: str, /) -> Callable[..., Markup]:
    """Macro ``name`` of ``template``: called with values, it gives Markup (each value escaped
    unless Markup)."""
    return getattr(environment().get_template(template).module, name)
