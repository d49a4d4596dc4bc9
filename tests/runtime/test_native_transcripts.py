"""``nativeTranscripts``: the runtime key (identity, the host value, refusal by a host that keeps
no native transcripts) and the bundle a host retains (``hosts/nativetranscripts``) on real
trees: complete, truncated, and every shape that is refused or left unavailable."""

from __future__ import annotations

import base64
import hashlib
import json
import os
from pathlib import Path

import pytest

from sevro_core.hosts.nativetranscripts import BUNDLE_FORMAT, Captured, NativeTree, capture
from sevro_core.limits import (
    MAX_NATIVE_TRANSCRIPT_BUNDLE_BYTES,
    MAX_NATIVE_TRANSCRIPT_ENTRIES,
    MAX_NATIVE_TRANSCRIPT_TREE_BYTES,
)
from sevro_core.states import Completeness
from sevro_core.testing import SevroProject
from sevro_core.vocabulary import NATIVE_TRANSCRIPTS_ARTIFACT
from tests.e2e.test_invocation_errors import assert_refused
from tests.runtime.test_runtime_loading import area, doc, load  # noqa: F401 - the fixture

SECRET = "sk-planted-0123456789"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A private CLI home: ``sessions/`` with a rollout and a child's, and the credential file
    and configuration beside it."""
    root = tmp_path / "codex-home"
    day = root / "sessions" / "2026" / "12" / "04"
    day.mkdir(parents=True)
    (day / "rollout-a-root.jsonl").write_text('{"type":"session_meta"}\n')
    (day / "rollout-b-child.jsonl").write_text(f'{{"call_id":"{SECRET}"}}\n')
    (root / "auth.json").write_text(json.dumps({"OPENAI_API_KEY": SECRET}))
    (root / "config.toml").write_text("model = 'x'\n")
    return root


def take(home: Path, whole: bool = True, secrets: tuple[str, ...] = ()) -> Captured:
    def scrub(data: bytes) -> bytes:
        for secret in secrets:
            data = data.replace(secret.encode(), b"[REDACTED]")
        return data

    return capture(NativeTree("codex", home, "sessions"), whole=whole, scrub=scrub)


def files_of(found: Captured) -> dict[str, bytes]:
    assert found.artifact is not None
    assert found.artifact.id == NATIVE_TRANSCRIPTS_ARTIFACT
    document = json.loads(found.artifact.content)
    assert document["format"] == BUNDLE_FORMAT
    assert found.data["sha256"] == hashlib.sha256(found.artifact.content).hexdigest()
    out = {}
    for entry in document["entries"]:
        content = base64.b64decode(entry["base64"])
        assert hashlib.sha256(content).hexdigest() == entry["sha256"]
        out[entry["path"]] = content
    return out


def unavailable(found: Captured, fragment: str) -> None:
    assert found.completeness == Completeness.UNAVAILABLE
    assert found.artifact is None
    assert found.data["status"] == "unavailable" and found.data["sha256"] is None
    assert fragment in str(found.data["reason"]), found.data["reason"]


# -- the runtime key -------------------------------------------------------------------------


def test_the_key_is_carried_to_hosts_and_enters_identity(area: Path) -> None:  # noqa: F811
    on, off, absent = (
        load(area, doc(nativeTranscripts=True)),
        load(area, doc(nativeTranscripts=False)),
        load(area, doc()),
    )
    assert on.native_transcripts and on.host_runtime().native_transcripts
    assert not off.native_transcripts and not off.host_runtime().native_transcripts
    assert on.configuration()["nativeTranscripts"] is True
    assert "nativeTranscripts" not in off.configuration()
    # Selected, it is another configuration; off is the same as absent (earlier files keep theirs).
    assert on.configuration()["digest"] != off.configuration()["digest"]
    assert off.configuration()["digest"] == absent.configuration()["digest"]


def test_the_scripted_host_refuses_the_key_before_anything_runs(
    sevro_project: SevroProject,
) -> None:
    host = sevro_project.script(default=[[{"reply": {"text": "ok"}}]])
    config = sevro_project.write_json("runtime.json", doc(nativeTranscripts=True))
    case = sevro_project.case()
    done = sevro_project.run(case, "--host-config", host, "--runtime-config-file", config)
    assert_refused(done, "nativeTranscripts is not supported by sevro.host.scripted", sevro_project)
    # The negative control: off, the same run goes ahead.
    config.write_text(json.dumps(doc(nativeTranscripts=False)))
    ran = sevro_project.run(case, "--host-config", host, "--runtime-config-file", config)
    assert ran.exit_code == 0, ran.stderr


# -- the bundle ------------------------------------------------------------------------------


def test_the_tree_is_bundled_alone_deterministically(home: Path) -> None:
    found = take(home)
    assert found.completeness == Completeness.COMPLETE and found.data["status"] == "complete"
    files = files_of(found)
    assert sorted(files) == [
        "codex/sessions/2026/12/04/rollout-a-root.jsonl",
        "codex/sessions/2026/12/04/rollout-b-child.jsonl",
    ]
    assert found.data["entries"] == 2 and found.data["rawBytes"] == sum(map(len, files.values()))
    # The same tree is the same bytes (and digest), whatever the walk order or the time.
    os.utime(home / "sessions" / "2026", (1, 1))
    assert take(home).artifact == found.artifact
    # The credential file beside the tree never enters the bundle.
    assert not [content for content in files.values() if b"OPENAI_API_KEY" in content]


def test_known_secrets_are_scrubbed_and_said_so(home: Path) -> None:
    plain, scrubbed = take(home), take(home, secrets=(SECRET,))
    assert SECRET.encode() in b"".join(files_of(plain).values())
    assert plain.data["redacted"] is False
    assert SECRET.encode() not in b"".join(files_of(scrubbed).values())
    assert b"[REDACTED]" in b"".join(files_of(scrubbed).values())
    assert scrubbed.data["redacted"] is True


def test_an_unfinished_trial_keeps_a_truncated_bundle(home: Path) -> None:
    found = take(home, whole=False)
    assert found.completeness == Completeness.PARTIAL and found.data["status"] == "truncated"
    assert found.artifact is not None and found.data["reason"]


def test_no_tree_is_unavailable(tmp_path: Path) -> None:
    unavailable(take(tmp_path), "wrote no codex/sessions tree")
    (tmp_path / "sessions").write_text("not a directory")
    unavailable(take(tmp_path), "is not a directory")


@pytest.mark.parametrize("kind", ["file", "directory", "root"])
def test_a_symbolic_link_is_never_followed(home: Path, tmp_path: Path, kind: str) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("outside the tree")
    day = home / "sessions" / "2026" / "12" / "04"
    if kind == "file":
        (day / "link.jsonl").symlink_to(outside / "secret.txt")
    elif kind == "directory":
        (day / "linked").symlink_to(outside)
    else:
        other = tmp_path / "other"
        other.mkdir()
        (other / "sessions").symlink_to(home / "sessions")
        unavailable(take(other), "codex/sessions is a symbolic link")
        return
    unavailable(take(home), "is a symbolic link")


def test_a_special_file_is_refused(home: Path) -> None:
    os.mkfifo(home / "sessions" / "pipe")
    unavailable(take(home), "codex/sessions/pipe is a special file")


def test_a_hard_linked_file_is_refused(home: Path) -> None:
    os.link(home / "auth.json", home / "sessions" / "auth-copy.jsonl")
    unavailable(take(home), "is hard-linked")


def test_more_entries_than_the_bound_is_unavailable(home: Path) -> None:
    many = home / "sessions" / "many"
    many.mkdir()
    for n in range(MAX_NATIVE_TRANSCRIPT_ENTRIES - 6):  # 2026, 12, 04, two rollouts, many
        (many / str(n)).touch()
    assert take(home).completeness == Completeness.COMPLETE  # exactly the bound
    (many / "one-more").touch()
    unavailable(take(home), "MAX_NATIVE_TRANSCRIPT_ENTRIES")


def test_more_raw_bytes_than_the_bound_is_unavailable(home: Path) -> None:
    existing = sum(p.stat().st_size for p in (home / "sessions").rglob("*") if p.is_file())
    big = home / "sessions" / "big.jsonl"
    with big.open("wb") as out:
        out.truncate(MAX_NATIVE_TRANSCRIPT_TREE_BYTES - existing)
    assert take(home).completeness == Completeness.COMPLETE  # exactly the bound
    with big.open("ab") as out:
        out.write(b"x")
    unavailable(take(home), "MAX_NATIVE_TRANSCRIPT_TREE_BYTES")


def test_an_encoded_bundle_over_its_bound_is_unavailable(tmp_path: Path) -> None:
    """Under the raw bound, but long names and base64 take the document past 7 MiB."""
    tree = tmp_path / "sessions"
    tree.mkdir()
    count, size = 1900, 2700
    assert count * size <= MAX_NATIVE_TRANSCRIPT_TREE_BYTES
    for n in range(count):
        (tree / f"{n:04d}-{'n' * 200}.jsonl").write_bytes(b"y" * size)
    found = take(tmp_path)
    unavailable(found, "MAX_NATIVE_TRANSCRIPT_BUNDLE_BYTES")
    assert str(MAX_NATIVE_TRANSCRIPT_BUNDLE_BYTES) in str(found.data["reason"])
