"""The viewer's Wilson intervals come from a helper process (so importing statsmodels overlaps
the verification of a large run); its answer must be the in-process one, and a helper that
fails, answers badly or is slow must never change a number."""

from __future__ import annotations

import pytest

from sevro_core.reporting.viewer import intervals as module
from sevro_core.reporting.viewer.intervals import IntervalHelper, _answer, wilson_intervals

COUNTS = [(0, 0), (0, 3), (3, 3), (7, 10)]


def test_the_helper_answers_what_this_process_computes() -> None:
    expected = wilson_intervals(COUNTS)
    assert expected[0] is None and expected[1] is not None and expected[1][0] < 1e-9
    with IntervalHelper() as helper:
        assert helper._process is not None  # a real second process
        assert helper.intervals(COUNTS) == expected


def test_a_failing_helper_leaves_the_numbers_to_this_process() -> None:
    with IntervalHelper(["false"]) as helper:  # starts, exits 1, answers nothing
        assert helper.intervals(COUNTS) == wilson_intervals(COUNTS)


def test_a_helper_answering_nonsense_is_not_believed() -> None:
    with IntervalHelper(["printf", "[null, [0.0, 0.5], [0.4, 1.0], [0.3, 0.9]]"]) as helper:
        assert helper.intervals(COUNTS) == [None, (0.0, 0.5), (0.4, 1.0), (0.3, 0.9)]  # control
    with IntervalHelper(["printf", "[null, [0.0, 0.5], [0.4, 1.0], [0.9, 0.3]]"]) as helper:
        assert helper.intervals(COUNTS) == wilson_intervals(COUNTS)


def test_a_slow_helper_is_killed_and_this_process_answers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(module, "VIEWER_INTERVALS_SECONDS", 0.5)
    with IntervalHelper(["sleep", "30"]) as helper:
        process = helper._process
        assert process is not None
        assert helper.intervals(COUNTS) == wilson_intervals(COUNTS)
    assert process.returncode is not None  # killed and reaped, not left behind


def test_an_unused_helper_is_killed_on_exit() -> None:
    with IntervalHelper(["sleep", "30"]) as helper:
        process = helper._process
        assert process is not None and process.poll() is None
    assert process.returncode is not None


@pytest.mark.parametrize(
    "reply",
    [
        b"not json",
        b"[]",  # too few
        b"[null, [0.0, 0.5], [0.4, 1.0], [0.3, 0.9], null]",  # too many
        b"[null, [0.0, 0.5], [0.4, 1.0], [0.9, 0.3]]",  # low above high
        b"[null, [0.0, 0.5], [0.4, 1.5], [0.3, 0.9]]",  # outside [0, 1]
        b'[null, [0.0, 0.5], [0.4, 1.0], [0.3, "0.9"]]',  # not a number
        b"[null, null, [0.4, 1.0], [0.3, 0.9]]",  # no interval for a decided row
        b"[[0.0, 0.1], [0.0, 0.5], [0.4, 1.0], [0.3, 0.9]]",  # one for an undecided row
    ],
)
def test_a_malformed_answer_is_refused(reply: bytes) -> None:
    assert _answer(reply, COUNTS) is None


def test_a_well_formed_answer_is_taken_as_it_is() -> None:
    reply = b"[null, [0.0, 0.5], [0.4, 1.0], [0.3, 0.9]]"
    assert _answer(reply, COUNTS) == [None, (0.0, 0.5), (0.4, 1.0), (0.3, 0.9)]
