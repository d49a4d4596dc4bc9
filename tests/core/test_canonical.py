from __future__ import annotations

import pytest

from sevro_core.formats.canonical import CanonicalJsonError, canonical_json, hash_json


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"b": 1, "a": 2}, '{"a":2,"b":1}'),
        (
            [1.0, 1e21, 1e-7, 0.1, -0.0, 123456789012345680000.0],
            "[1,1e+21,1e-7,0.1,0,123456789012345680000]",
        ),
        ({"\u20ac": 1, "\U0001f600": 2, "\uffff": 3}, '{"\u20ac":1,"\U0001f600":2,"\uffff":3}'),
        ('\u0001"\\\n\u00e9', '"\\u0001\\"\\\\\\n\u00e9"'),
        (None, "null"),
        (True, "true"),
    ],
)
def test_rfc8785_forms(value: object, expected: str) -> None:
    assert canonical_json(value) == expected.encode("utf-8")


def test_key_order_and_spacing_do_not_change_the_digest() -> None:
    assert hash_json({"a": [1, 2], "b": {"c": 1.0}}) == hash_json({"b": {"c": 1}, "a": [1, 2]})
    assert hash_json({"a": 1}) != hash_json({"a": 2})


@pytest.mark.parametrize("value", [float("nan"), float("inf"), 2**60, "\ud800"])
def test_values_outside_the_domain_are_refused(value: object) -> None:
    with pytest.raises(CanonicalJsonError):
        canonical_json(value)
