"""The figures as pure functions: marks sized by the numbers given, unknown values said and never
drawn, bounded, and untrusted labels escaped so the SVG still parses."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from sevro_core.limits import MAX_PLOT_BARS, MAX_PLOT_LABEL_CHARS, MAX_PLOT_POINTS
from sevro_core.reporting.plots import (
    Distribution,
    RateBar,
    TransitionCounts,
    distribution_svg,
    pass_rate_svg,
    transitions_svg,
)

NS = "{http://www.w3.org/2000/svg}"
HOSTILE = '<script>alert("x")</script> & "quoted" \x01 end'


def parse(svg: str) -> ET.Element:
    root = ET.fromstring(svg)
    assert root.tag == f"{NS}svg" and root.get("role") == "img"
    title = root.find(f"{NS}title")
    assert title is not None and title.text and root.get("aria-label") == title.text
    return root


def marks(root: ET.Element, tag: str, cls: str) -> list[ET.Element]:
    return [e for e in root.iter(f"{NS}{tag}") if e.get("class") == cls]


def captions(root: ET.Element) -> str:
    return " ".join(e.text or "" for e in marks(root, "text", "caption"))


def bar(case: str, arm: str | None, passes: int, decided: int) -> RateBar:
    rate = passes / decided if decided else None
    return RateBar(
        case, arm, passes, decided, rate, 0.1 if decided else None, 0.9 if decided else None
    )


def test_bars_are_as_wide_as_their_rates_and_whiskers_span_the_interval() -> None:
    root = parse(pass_rate_svg([bar("a", "base", 1, 4), bar("a", "cand", 3, 4)]))
    widths = [float(r.get("width", "")) for r in marks(root, "rect", "bar")]
    assert widths == [0.25 * 360, 0.75 * 360]
    (first, _) = marks(root, "path", "interval")
    assert (first.get("data-low"), first.get("data-high")) == ("0.1", "0.9")
    assert first.get("d", "").startswith("M336.00,")  # 300 + 0.1 * 360
    fills = {r.get("fill") for r in marks(root, "rect", "bar")}
    assert fills == {"url(#sevro-pass-rates-arm0)", "url(#sevro-pass-rates-arm1)"}
    patterns = {p.get("id") for p in root.iter(f"{NS}pattern")}
    assert patterns == {"sevro-pass-rates-arm0", "sevro-pass-rates-arm1"}, "each arm its own"


def test_an_unknown_rate_is_written_never_drawn_as_zero() -> None:
    root = parse(pass_rate_svg([bar("a", "base", 0, 0), bar("b", "base", 0, 2)]))
    (drawn,) = marks(root, "rect", "bar")
    assert (drawn.get("data-case"), drawn.get("width")) == ("b", "0.00")
    (unknown,) = marks(root, "text", "unknown")
    assert unknown.get("data-case") == "a" and "unknown" in (unknown.text or "")


def test_bars_beyond_the_limit_are_counted_not_drawn() -> None:
    bars = [bar(f"c{i}", None, 1, 2) for i in range(MAX_PLOT_BARS + 5)]
    root = parse(pass_rate_svg(bars))
    assert len(marks(root, "rect", "bar")) == MAX_PLOT_BARS
    assert "5 more bar(s) not drawn" in captions(root)
    under = parse(pass_rate_svg(bars[:MAX_PLOT_BARS]))
    assert "not drawn" not in captions(under)


def test_hostile_labels_are_escaped_bounded_and_the_svg_parses() -> None:
    svg = pass_rate_svg([bar(HOSTILE, HOSTILE, 1, 2), bar("x" * 500, "arm", 1, 2)])
    assert "<script>" not in svg and "\x01" not in svg
    root = parse(svg)
    assert not list(root.iter("script")) and not list(root.iter(f"{NS}script"))
    first = marks(root, "rect", "bar")[0]
    assert first.get("data-case") == HOSTILE.replace("\x01", "\ufffd")
    long_case = marks(root, "rect", "bar")[1].get("data-case", "")
    assert len(long_case) == MAX_PLOT_LABEL_CHARS and long_case.endswith("…")
    counts = TransitionCounts(HOSTILE, "t&t", 1, 2, 3, 4, 0)
    title = parse(transitions_svg(counts)).get("aria-label", "")
    assert "<script>" in title and "t&t" in title  # as text, after parsing the escapes
    values: dict[str, list[float | None]] = {HOSTILE: [1.0]}
    parse(distribution_svg(Distribution(HOSTILE, "ms", values)))


def test_transition_cells_carry_their_counts_and_inconclusive_pairs_are_said() -> None:
    root = parse(transitions_svg(TransitionCounts("base", "cand", 1, 5, 0, 2, 3)))
    cells = {c.get("data-cell"): c for c in marks(root, "rect", "cell")}
    assert {k: int(v.get("data-count", "")) for k, v in cells.items()} == {
        "bothPass": 1,
        "broken": 0,
        "fixed": 5,
        "bothFail": 2,
    }
    opacity = {k: float(v.get("fill-opacity", "")) for k, v in cells.items()}
    assert opacity["fixed"] > opacity["bothFail"] > opacity["bothPass"] > opacity["broken"]
    texts = [t.text for t in root.iter(f"{NS}text")]
    assert "5" in texts and "fail → pass" in texts, "counts and words, not colour alone"
    assert "3 inconclusive pair(s)" in captions(root)
    clean = parse(transitions_svg(TransitionCounts("base", "cand", 1, 5, 0, 2, 0)))
    assert "inconclusive" not in captions(clean)


def test_unknown_values_are_left_out_and_said_points_are_bounded() -> None:
    values: dict[str, list[float | None]] = {
        "base": [10.0, None, 30.0, 20.0],
        "cand": [None, None],
        "many": [float(i) for i in range(MAX_PLOT_POINTS + 50)],
    }
    root = parse(distribution_svg(Distribution("input tokens", "tokens", values)))
    points = marks(root, "circle", "point")
    base = sorted(float(p.get("data-value", "")) for p in points if p.get("data-arm") == "base")
    assert base == [10.0, 20.0, 30.0]
    assert not [p for p in points if p.get("data-arm") == "cand"]
    assert len([p for p in points if p.get("data-arm") == "many"]) == MAX_PLOT_POINTS
    ranges = {r.get("data-arm"): r for r in marks(root, "path", "range")}
    assert ranges["base"].get("data-median") == "20.0"
    assert ranges["many"].get("data-max") == f"{float(MAX_PLOT_POINTS + 49)!r}"
    text = captions(root)
    assert "base: 1 trial(s) with unknown input tokens left out" in text
    assert "cand: 2 trial(s)" in text and "50 more point(s) not drawn" in text
    (none,) = marks(root, "text", "unknown")
    assert none.get("data-arm") == "cand"


def test_values_that_are_not_finite_are_unknown_and_negative_ones_stay_on_the_axis() -> None:
    values: dict[str, list[float | None]] = {"base": [float("nan"), float("inf"), -10.0, 10.0]}
    svg = distribution_svg(Distribution("drift", "ms", values))
    assert "nan" not in svg and "inf" not in svg
    root = parse(svg)
    xs = sorted(float(p.get("cx", "")) for p in marks(root, "circle", "point"))
    assert xs == [200.0, 560.0], "the axis runs from the lowest value to the highest"
    assert "base: 2 trial(s) with unknown drift left out" in captions(root)


def test_each_figure_prefixes_its_ids_so_a_page_can_inline_several() -> None:
    values: dict[str, list[float | None]] = {"base": [1.0]}
    one = parse(distribution_svg(Distribution("duration", "ms", values), ids='run "1"<'))
    two = parse(distribution_svg(Distribution("input tokens", "tokens", values)))
    ids = [{p.get("id") for p in root.iter(f"{NS}pattern")} for root in (one, two)]
    assert ids == [{"run--1---arm0"}, {"sevro-input-tokens-arm0"}]
    (point,) = marks(one, "circle", "point")
    assert point.get("fill") == "url(#run--1---arm0)"
