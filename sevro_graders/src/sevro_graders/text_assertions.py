"""Plain-text assertions shared by the graders that compare a text: ``equals``, ``contains``,
``notContains``, in that order, the first that does not hold named by its key and index."""

from __future__ import annotations

from collections.abc import Mapping

from attrs import frozen

from sevro_core.api import JsonValue


def _texts(value: JsonValue) -> tuple[str, ...]:
    items = value if isinstance(value, list) else [value]
    return tuple(str(item) for item in items)


@frozen
class TextAssertions:
    equals: str | None = None
    contains: tuple[str, ...] = ()
    not_contains: tuple[str, ...] = ()

    @classmethod
    def of(cls, config: Mapping[str, JsonValue]) -> TextAssertions:
        """From a schema-checked configuration (a string or a list of strings per key)."""
        equals = config.get("equals")
        return cls(
            equals=str(equals) if equals is not None else None,
            contains=_texts(config["contains"]) if "contains" in config else (),
            not_contains=_texts(config["notContains"]) if "notContains" in config else (),
        )

    def first_failure(self, text: str, subject: str) -> str | None:
        """Exact, case-sensitive; ``subject`` names the text in the detail (``'NOTES.md'``)."""
        if self.equals is not None and text != self.equals:
            return f"{subject} does not equal the expected text"
        for index, wanted in enumerate(self.contains):
            if wanted not in text:
                return f"{subject} does not contain contains[{index}]"
        for index, unwanted in enumerate(self.not_contains):
            if unwanted in text:
                return f"{subject} contains notContains[{index}]"
        return None
