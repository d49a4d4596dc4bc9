"""Write seed-blocks.txt: every ```sh block of Sevro contract seeds 000-002, verbatim.

The seeds live outside the repository (/work/shared/seeds in the development environment), so
the test reads this copy. Regenerate it after a seed changes:

    python tests/e2e/data/seed_commands/extract.py /path/to/seeds

Each seed is a diff of Sevro's docs; a block is the added lines between ``+```sh`` and
``+```````, written without their leading ``+`` under a ``## <seed> line <n>`` heading (the
1-based line of the block's first command in the seed file). commands.json then lists what
the test runs from these blocks; test_seed_commands.py checks the two agree.
"""

from __future__ import annotations

import sys
from pathlib import Path

HEADER = [
    "<!-- Verbatim copies of every ```sh block in Sevro contract seeds 000-002 (each line of the",
    "     seed diff without its leading '+'), as extract.py wrote them. Do not edit by hand. -->",
    "",
]


def blocks(seed: Path) -> list[str]:
    lines, out, index = seed.read_text().splitlines(), [], 0
    while index < len(lines):
        if lines[index] == "+```sh":
            end = lines.index("+```", index + 1)
            out += [f"## {seed.name[:3]} line {index + 2}", "", "```sh"]
            out += [line[1:] for line in lines[index + 1 : end]]
            out += ["```", ""]
            index = end
        index += 1
    return out


def main(seeds: Path) -> None:
    out = list(HEADER)
    for seed in sorted(seeds.glob("00[012]_*.txt")):
        out += blocks(seed)
    (Path(__file__).parent / "seed-blocks.txt").write_text("\n".join(out))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
