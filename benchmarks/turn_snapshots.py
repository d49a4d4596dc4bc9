"""What keeping a turn's workspace costs: one ``copy_workspace`` plus its digest (what the engine
does when a turn a check grades settles), on a small and a large workspace.

The small one is a typical fixture (200 files, 2 MB); the large one is near a mid-size
repository checkout (2 000 files in 40 directories, 20 MB, plus a ``.git`` of 200 objects).
The figure is the median over rounds, each on a fresh target directory, beside ``cp -a`` of the
same tree for scale: creating files dominates, so the machine's file system sets the pace.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

BUDGET_RATIO_TO_CP = 1.5


def build(root: Path, files: int, size: int, git_objects: int = 0) -> Path:
    for index in range(files):
        path = root / f"d{index % 40:02}" / f"f{index:05}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(os.urandom(size // 2).hex().encode()[:size])
    for index in range(git_objects):
        path = root / ".git" / "objects" / f"{index % 256:02x}" / f"o{index:05}"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(os.urandom(2048))
    return root


def keep_ms(workspace: Path, scratch: Path, rounds: int) -> list[float]:
    from sevro_core.fixtures.changes import snapshot
    from sevro_core.fixtures.snapshots import copy_workspace

    timings = []
    for index in range(rounds):
        target = scratch / f"copy-{index}"
        started = time.perf_counter()
        complete = copy_workspace(workspace, target)
        digest = snapshot(target)
        timings.append((time.perf_counter() - started) * 1000)
        assert complete and digest.complete
        shutil.rmtree(target)
    return timings


def cp_ms(workspace: Path, scratch: Path, rounds: int) -> list[float]:
    timings = []
    for index in range(rounds):
        target = scratch / f"cp-{index}"
        started = time.perf_counter()
        subprocess.run(["cp", "-a", str(workspace), str(target)], check=True)
        timings.append((time.perf_counter() - started) * 1000)
        shutil.rmtree(target)
    return timings


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--check", action="store_true", help="exit 1 when over budget")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        small = build(root / "small", 200, 10_000)
        large = build(root / "large", 2000, 10_000, git_objects=200)
        figures = {
            "small (200 files, 2 MB)": (keep_ms(small, root, args.rounds), cp_ms(small, root, 3)),
            "large (2000 files, 20 MB, .git)": (
                keep_ms(large, root, args.rounds),
                cp_ms(large, root, 3),
            ),
        }
    worst = 0.0
    for name, (values, cp) in figures.items():
        rounds = ", ".join(f"{v:.1f}" for v in values)
        ratio = statistics.median(values) / statistics.median(cp)
        worst = max(worst, ratio)
        print(
            f"keep one turn, {name}: median {statistics.median(values):.1f} ms ({rounds}); "
            f"cp -a {statistics.median(cp):.1f} ms; ratio {ratio:.2f}"
        )
    print(f"budget: copy and digest <= {BUDGET_RATIO_TO_CP} x cp -a")
    return 1 if args.check and worst > BUDGET_RATIO_TO_CP else 0


if __name__ == "__main__":
    raise SystemExit(main())
