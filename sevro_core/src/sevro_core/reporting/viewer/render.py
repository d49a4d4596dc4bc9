"""The page written out: one HTML file whose only script and style are the packaged
``viewer.js`` and ``viewer.css``, inlined and allowed by their SHA-256 in a strict
Content-Security-Policy, so it works from ``file://`` and any static host with no network."""

from __future__ import annotations

import base64
import functools
import hashlib
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from sevro_core.errors import InvocationError

PAGE_NAME = "index.html"


def _asset(name: str) -> str:
    return (
        resources.files("sevro_core.reporting.viewer").joinpath("assets", name).read_text("utf-8")
    )


def _hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def content_security_policy(script: str, style: str) -> str:
    """Nothing may load or run but the two inlined assets (by hash) and data: images."""
    return (
        f"default-src 'none'; script-src {_hash(script)}; style-src {_hash(style)}; "
        "img-src data:; base-uri 'none'; form-action 'none'"
    )


def _percent(value: float | None) -> str:
    return "unknown" if value is None else f"{100 * value:.0f}%"


def _interval(interval: Mapping[str, float] | None) -> str:
    if not interval:
        return "unknown"
    return f"[{100 * interval['low']:.0f}%, {100 * interval['high']:.0f}%]"


@functools.cache
def page_template() -> Any:
    """The page's compiled Jinja template; every value it shows is escaped by autoescape."""
    import jinja2

    from sevro_core.reporting.experiment import judged_sentences, verdict_sentence

    environment = jinja2.Environment(
        loader=jinja2.PackageLoader("sevro_core.reporting.viewer", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
    )
    environment.filters["percent"] = _percent
    environment.filters["interval"] = _interval
    environment.globals["verdict_sentence"] = verdict_sentence
    environment.globals["judged_sentences"] = judged_sentences
    return environment.get_template("page.html.j2")


def render_page(page: Mapping[str, Any]) -> str:
    """The page as HTML."""
    script, style = _asset("viewer.js"), _asset("viewer.css")
    return str(
        page_template().render(
            page=page, script=script, style=style, csp=content_security_policy(script, style)
        )
    )


def write_page(html: str, out: Path) -> Path:
    """``out/index.html``; a file in the way of the directory is refused."""
    if out.exists() and not out.is_dir():
        raise InvocationError(f"--out {out} exists and is not a directory")
    out.mkdir(parents=True, exist_ok=True)
    target = out / PAGE_NAME
    target.write_text(html, encoding="utf-8")
    return target
