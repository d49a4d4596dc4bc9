"""The source closure: digested as Sevro's hashJson, refused when malformed, re-checked."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest

from sevro_core.api import CancelToken, InvocationError
from sevro_extensions.client import call_method
from sevro_extensions.errors import ExtensionSourceError
from sevro_extensions.negotiation import describe_params
from sevro_extensions.sources import source_closure
from tests.extensions.conftest import MISBEHAVING, options


def _files(tmp_path: Path, *contents: bytes) -> list[str]:
    names = []
    for index, content in enumerate(contents):
        path = tmp_path / f"f{index}"
        path.write_bytes(content)
        names.append(str(path))
    return names


def test_the_digest_is_the_sha256_of_the_canonical_json_list_of_file_digests(
    tmp_path: Path,
) -> None:
    names = _files(tmp_path, b"#!/bin/sh\n", b"one", b"two")
    closure = source_closure(names[0], names[1:])
    shas = [hashlib.sha256(Path(name).read_bytes()).hexdigest() for name in names]
    # RFC 8785 of a list of hex strings is the compact form
    expected = hashlib.sha256(('["' + '","'.join(shas) + '"]').encode()).hexdigest()
    assert closure.digest == expected
    assert closure.paths == tuple(Path(name) for name in names)
    other = source_closure(names[0], [names[2], names[1]])
    assert other.digest != closure.digest, "order is part of the closure"


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("no-source", "at least one --extension-source-file is required"),
        ("relative", "rel: extension source must be an absolute path"),
        ("twice", "extension source is named twice"),
        ("twice-spelled-differently", "extension source is named twice"),
        ("missing", "extension source does not exist"),
        ("symlink", "extension source is a symlink"),
        ("directory", "extension source is not a regular file"),
        ("fifo", "extension source is not a regular file"),
    ],
)
def test_a_malformed_closure_is_refused_with_exit_64(
    tmp_path: Path, case: str, message: str
) -> None:
    argv0, source = _files(tmp_path, b"exe", b"src")
    link, fifo = tmp_path / "link", tmp_path / "fifo"
    link.symlink_to(source)
    os.mkfifo(fifo)
    sources = {
        "no-source": [],
        "relative": ["rel"],
        "twice": [source, source],
        "twice-spelled-differently": [source, str(tmp_path / "." / "f1")],
        "missing": [str(tmp_path / "missing")],
        "symlink": [str(link)],
        "directory": [str(tmp_path)],
        "fifo": [str(fifo)],
    }[case]
    with pytest.raises(InvocationError) as caught:
        source_closure(argv0, sources)
    assert caught.value.exit_code == 64
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_a_well_formed_closure_of_the_same_files_is_accepted(tmp_path: Path) -> None:
    """Positive control for the refusals above."""
    argv0, source = _files(tmp_path, b"exe", b"src")
    assert len(source_closure(argv0, [source]).files) == 2


def test_argv0_named_again_as_a_source_counts_once(tmp_path: Path) -> None:
    """A self-contained executable is its own source (Sevro dedupes argv[0] the same way)."""
    (argv0,) = _files(tmp_path, b"exe")
    closure = source_closure(argv0, [argv0])
    assert closure.paths == (Path(argv0),)


def test_verify_passes_while_nothing_changes_even_if_a_file_is_rewritten_identically(
    tmp_path: Path,
) -> None:
    argv0, source = _files(tmp_path, b"exe", b"src")
    closure = source_closure(argv0, [source])
    assert closure.verify("before resolve").digest == closure.digest
    Path(source).write_bytes(b"src")  # new mtime and ctime, same bytes: rehashed, equal
    assert closure.verify("before resolve").digest == closure.digest


@pytest.mark.parametrize("change", ["content", "deleted", "symlink", "same-size"])
def test_verify_fails_on_any_change(tmp_path: Path, change: str) -> None:
    argv0, source = _files(tmp_path, b"exe", b"src")
    closure = source_closure(argv0, [source])
    path = Path(source)
    if change == "content":
        path.write_bytes(b"src changed")
    elif change == "same-size":
        path.write_bytes(b"SRC")
    elif change == "deleted":
        path.unlink()
    else:
        path.unlink()
        path.symlink_to(argv0)
    with pytest.raises(ExtensionSourceError) as caught:
        closure.verify("after prepare")
    assert str(caught.value).startswith(f"extension source {source} ")
    assert str(caught.value).endswith("after prepare")


def test_an_extension_that_rewrites_itself_fails_the_call(node: str, tmp_path: Path) -> None:
    copy = tmp_path / "misbehaving.js"
    shutil.copyfile(MISBEHAVING, copy)
    argv = [node, str(copy), "self-modifying"]
    closure = source_closure(node, [str(copy)])
    params = describe_params([], [])
    with pytest.raises(ExtensionSourceError) as caught:
        call_method(argv, closure, "describe", params, options(tmp_path))
    assert str(caught.value) == f"extension source {copy} changed after describe"


def test_the_same_extension_answering_without_rewriting_itself_passes(
    node: str, tmp_path: Path
) -> None:
    """Positive control: the copy, in a mode that leaves its source alone."""
    copy = tmp_path / "misbehaving.js"
    shutil.copyfile(MISBEHAVING, copy)
    closure = source_closure(node, [str(copy)])
    answer = call_method(
        [node, str(copy), "huge-stderr"],
        closure,
        "describe",
        describe_params([], []),
        options(tmp_path, cancel=CancelToken()),
    )
    assert answer.closure.digest == closure.digest


def test_a_change_between_calls_fails_the_next_call_before_it_starts(
    node: str, tmp_path: Path
) -> None:
    copy = tmp_path / "misbehaving.js"
    shutil.copyfile(MISBEHAVING, copy)
    closure = source_closure(node, [str(copy)])
    copy.write_text(copy.read_text() + "\n// edited between calls\n")
    # "crash" would fail the call with a process error: a source error proves it never ran
    argv = [node, str(copy), "crash"]
    with pytest.raises(ExtensionSourceError, match=r"changed before resolve$"):
        call_method(
            argv,
            closure,
            "resolve",
            {"projectRoot": tmp_path.as_uri(), "selectors": {}, "configuration": {}},
            options(tmp_path),
        )
