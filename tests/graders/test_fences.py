"""The ```json fence finder: exactly what the fence regex finds, in linear time."""

from __future__ import annotations

import random
import re

from sevro_graders.jsondoc import FENCE_PATTERN, NoDocument, find_document, find_fences

TOKENS = ["```json", "```", "\n", "\r", "\r\n", " ", "\t", "x", "json", "`", "{}", "[1]", "\n```"]


def regex_fences(text: str) -> list[tuple[int, int, str]]:
    return [(m.start(), m.end(), m.group(1)) for m in re.finditer(FENCE_PATTERN, text, re.DOTALL)]


def scanner_fences(text: str) -> list[tuple[int, int, str]]:
    return [(f.start, f.end, f.body) for f in find_fences(text)]


def test_the_scanner_finds_what_the_regex_finds() -> None:
    chance = random.Random(7)
    with_fences = 0
    for _ in range(20_000):
        text = "".join(chance.choice(TOKENS) for _ in range(chance.randrange(0, 24)))
        expected = regex_fences(text)
        assert scanner_fences(text) == expected, repr(text)
        with_fences += bool(expected)
    assert with_fences > 1000  # the inputs do exercise fences


def test_fence_examples() -> None:
    for text in [
        "```json\n{}\n```",
        "```json \t\r\n{}\r\n \t```",
        "a```json\n```json\n1\n```\n```",
        "```json\n\n```",
        "```json\n```",
        "```json\r\r\n{}\n```",
        "```json\n1\n```\n```json\n2\n```",
    ]:
        assert scanner_fences(text) == regex_fences(text), repr(text)


def test_many_unclosed_openings_do_not_stall_grading() -> None:
    """The regex needed ~100 s for 20 000 openings (quadratic); this is 100 000."""
    text = "x```json\n" * 100_000
    assert find_fences(text) == []
    assert find_document(text) == NoDocument("the message is not JSON and has no ```json fence")
