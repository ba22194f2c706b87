"""The templates of every HTML page the product writes (Jinja2, every value escaped unless it is
Markup), each extending base.html: the one skeleton (language, title, style, a menu before the main
content).

    report.html        a student's report (report/html.py), with report_parts.html, its blocks
    dashboard.html     the class dashboard (report/dashboard.py)
    similarity.html    the similarity report (similarity/html.py)
    service.html       the service's layout (its style, menu and error box), which its pages extend:
                       signin.html, upload.html, list.html, status.html, instructor.html
                       (service/app.py); nav.html, status_words.html and scores_chart.html are
                       their parts

    environment() -> jinja2.Environment         one per process, made on first use
    render(name, **context) -> str              the page `name`
    macros(name, **context)                     the macros of `name`, for Python to call

jinja2 is imported on first use, so that a command that writes no page does not load it.
"""

import functools
from pathlib import Path

FOLDER = Path(__file__).resolve().parent


@functools.cache
@functools.cache
def environment():
    """The Jinja2 environment of every page (autoescaped; made once per process)."""
    from jinja2 import Environment, FileSystemLoader, select_autoescape

    return Environment(
        loader=FileSystemLoader(FOLDER),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,  # a line that holds only a {% tag %} leaves nothing in the page
        lstrip_blocks=True,
        auto_reload=False,  # the templates are package data: they do not change under a process
    )


def render(name, **context):
    """Template `name` rendered with `context`, as HTML text."""
    return environment().get_template(name).render(**context)


def macros(name, **context):
    """The module of template `name` rendered with `context`: its macros, as functions returning Markup."""
    return environment().get_template(name).make_module(context)
