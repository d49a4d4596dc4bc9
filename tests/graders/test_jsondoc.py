"""JSON helpers: document detection, RFC 6901 pointers, JavaScript equality and subset matching."""

from __future__ import annotations

import pytest

from sevro_core.errors import ConfigurationError
from sevro_graders.jsondoc import (
    MAX_DOCUMENT_DEPTH,
    MISSING,
    Document,
    NoDocument,
    Pointer,
    PointerSyntaxError,
    compile_matcher,
    find_document,
    js_equal,
)

FENCED = 'Here you go:\n```json\n{"status": "ready"}\n```\nThanks.'


def document(text: str) -> Document:
    found = find_document(text)
    assert isinstance(found, Document), found
    return found


def no_document(text: str) -> str:
    found = find_document(text)
    assert isinstance(found, NoDocument), found
    return found.reason


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ('{"a": 1}', {"a": 1}),
        (' \n\t{"a": [1, 2]}\r\n ', {"a": [1, 2]}),
        ('"ready"', "ready"),
        ("42", 42),
        ("true", True),
        ("null", None),
        ('{"a": 1, "a": 2}', {"a": 2}),
    ],
)
def test_whole_text_json_is_an_exact_document(text: str, value: object) -> None:
    found = document(text)
    assert found.value == value and found.exact


@pytest.mark.parametrize(
    "text",
    [
        FENCED,
        'say ```json\n{"status": "ready"}\n```',
        '```json\n{"status": "ready"}\n```.',
        '```json\n{"status": "ready"}\n```\n```python\nprint()\n```',
    ],
)
def test_one_fence_with_other_text_is_a_document_but_not_exact(text: str) -> None:
    found = document(text)
    assert found.value == {"status": "ready"} and not found.exact


@pytest.mark.parametrize(
    "text",
    [
        '```json\n{"a": 1}\n```',
        '\n  ```json\n{"a": 1}\n```  \n',
        '\u00a0```json\n{"a": 1}\n```\ufeff',
        '```json \r\n{"a": 1}\r\n```\r\n',
        '```json\n{\n  "a": 1\n}\n```',
    ],
)
def test_a_fence_that_is_the_whole_trimmed_message_is_exact(text: str) -> None:
    found = document(text)
    assert found.value == {"a": 1} and found.exact


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("ready", "not JSON and has no ```json fence"),
        ("", "not JSON and has no ```json fence"),
        ('```jsonc\n{"a": 1}\n```', "has no ```json fence"),
        ('```JSON\n{"a": 1}\n```', "has no ```json fence"),
        ('```\n{"a": 1}\n```', "has no ```json fence"),
        ('```json\n{"a": 1}```', "has no ```json fence"),
        ('```json\n{"a": 1}\n```\n```json\n{"b": 2}\n```', "has 2 ```json fences"),
        ("```json\n{'a': 1}\n```", "the ```json fence is not valid JSON (line 1 column 2"),
        ("```json\nNaN\n```", "the ```json fence is not valid JSON (NaN is not JSON)"),
        ("```json\n\n```", "the ```json fence is not valid JSON"),
    ],
)
def test_messages_without_a_usable_document(text: str, reason: str) -> None:
    assert reason in no_document(text)


@pytest.mark.parametrize("text", ["NaN", "Infinity", "-Infinity", '{"a": NaN}', "[1,]", "{'a': 1}"])
def test_json_parse_strictness(text: str) -> None:
    assert "no ```json fence" in no_document(text)


def test_whole_text_wins_over_a_fence_inside_a_json_string() -> None:
    found = document('"```json\\n{}\\n```"')
    assert found.value == "```json\n{}\n```" and found.exact


def test_numbers_beyond_pythons_int_limit_are_doubles_as_in_javascript() -> None:
    assert document("1" + "0" * 5000).value == float("inf")


def test_document_nesting_is_bounded() -> None:
    deepest = "[" * MAX_DOCUMENT_DEPTH + "]" * MAX_DOCUMENT_DEPTH
    assert document(deepest).exact
    too_deep = "[" * (MAX_DOCUMENT_DEPTH + 1) + "]" * (MAX_DOCUMENT_DEPTH + 1)
    assert "no ```json fence" in no_document(too_deep)
    fenced = f"```json\n{too_deep}\n```"
    assert f"deeper than {MAX_DOCUMENT_DEPTH} levels" in no_document(fenced)
    assert "not valid JSON" in no_document("```json\n" + "[" * 100_000 + "\n```")


@pytest.mark.parametrize(
    ("source", "tokens"),
    [
        ("", ()),
        ("/", ("",)),
        ("/a", ("a",)),
        ("/a/0/b", ("a", "0", "b")),
        ("/a~1b", ("a/b",)),
        ("/m~0n", ("m~n",)),
        ("/~01", ("~1",)),
        ("/~10", ("/0",)),
        ("//", ("", "")),
    ],
)
def test_pointer_parsing(source: str, tokens: tuple[str, ...]) -> None:
    assert Pointer.parse(source).tokens == tokens


@pytest.mark.parametrize("source", ["a", "a/b", "#/a", "/~", "/~2", "/a~"])
def test_invalid_pointers(source: str) -> None:
    with pytest.raises(PointerSyntaxError):
        Pointer.parse(source)


DOC = {"a": {"b/c": [10, 20, {"d": None}]}, "m~n": 1, "": "empty", "list": ["x"]}


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("", DOC),
        ("/a/b~1c/0", 10),
        ("/a/b~1c/2/d", None),
        ("/m~0n", 1),
        ("/", "empty"),
        ("/list/0", "x"),
    ],
)
def test_pointer_resolution(source: str, expected: object) -> None:
    assert Pointer.parse(source).resolve(DOC) == expected


@pytest.mark.parametrize(
    "source",
    ["/missing", "/list/1", "/list/-", "/list/00", "/list/01", "/list/+0", "/list/x", "/m~0n/0"],
)
def test_pointers_that_select_nothing(source: str) -> None:
    assert Pointer.parse(source).resolve(DOC) is MISSING


def test_null_is_a_value_not_missing() -> None:
    assert Pointer.parse("/a").resolve({"a": None}) is None


@pytest.mark.parametrize(
    ("expected", "actual", "equal"),
    [
        (1, 1.0, True),
        (1.5, 1.5, True),
        (0, -0.0, True),
        (2**53, 2**53 + 1, True),
        (10**400, float("inf"), True),
        (1, 2, False),
        (True, 1, False),
        (1, True, False),
        (False, 0, False),
        (True, True, True),
        (None, None, True),
        (None, False, False),
        (None, 0, False),
        ("1", 1, False),
        ("a", "a", True),
        ([1, 2], [1.0, 2.0], True),
        ([1, 2], [2, 1], False),
        ([1], [1, 1], False),
        ({"a": 1, "b": [True]}, {"b": [True], "a": 1.0}, True),
        ({"a": 1}, {"a": 1, "b": 2}, False),
        ({"a": None}, {}, False),
        ([], {}, False),
        ({"a": {"b": [1, {"c": 2}]}}, {"a": {"b": [1, {"c": 2.0}]}}, True),
    ],
)
def test_javascript_deep_equality(expected: object, actual: object, equal: bool) -> None:
    assert js_equal(expected, actual) is equal
    assert js_equal(actual, expected) is equal


@pytest.mark.parametrize(
    ("expected", "actual", "matches"),
    [
        (1, 1.0, True),
        (True, 1, False),
        ({}, {"any": "thing"}, True),
        ({}, [], False),
        ([], [1, 2], True),
        ([], {}, False),
        ({"a": 1}, {"a": 1, "b": 2}, True),
        ({"a": 1}, {"b": 2}, False),
        ({"a": None}, {}, False),
        ([2, 1], [1, 2, 3], True),
        ([1, 4], [1, 2, 3], False),
        ([1, 1], [1], True),
        ({"items": [{"id": 2}]}, {"items": [{"id": 1, "x": 0}, {"id": 2, "x": 1}]}, True),
        ({"items": [{"id": 3}]}, {"items": [{"id": 1}, {"id": 2}]}, False),
        ([[1]], [[0, 1], [2]], True),
        ([[3]], [[0, 1], [2]], False),
        ({"$regex": "^fix"}, "fix: bug", True),
        ({"$regex": "^fix"}, "a fix", False),
        ({"$regex": "^fix"}, "a\nfix", True),
        ({"$regex": "1"}, 1, False),
        ({"$regex": "."}, ["x"], False),
        ({"title": {"$regex": "ready"}}, {"title": "is ready"}, True),
        ({"$regex": "x", "other": 1}, {"$regex": "x", "other": 1}, True),
        ({"$regex": "x", "other": 1}, {"$regex": "xyz", "other": 1}, False),
        ({"a": {"$regex": "^\\d+$"}}, {"a": "\u0661"}, False),
    ],
)
def test_subset_matching(expected: object, actual: object, matches: bool) -> None:
    assert compile_matcher(expected, "/contains").matches(actual) is matches


@pytest.mark.parametrize(
    ("expected", "pointer", "message"),
    [
        ({"$regex": "("}, "/contains/$regex", "unterminated group"),
        ([{"a": {"$regex": "a**"}}], "/contains/0/a/$regex", "nothing to repeat"),
        ({"$regex": 5}, "/contains/$regex", "$regex must be a string"),
        ({"a~b/c": {"$regex": None}}, "/contains/a~0b~1c/$regex", "$regex must be a string"),
    ],
)
def test_bad_regex_matchers_are_refused_at_their_pointer(
    expected: object, pointer: str, message: str
) -> None:
    with pytest.raises(ConfigurationError) as refused:
        compile_matcher(expected, "/contains")
    assert refused.value.pointer == pointer
    assert message in refused.value.message
