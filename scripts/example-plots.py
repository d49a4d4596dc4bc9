"""Regenerate the figures shown in docs/plots.md from a real scripted-host experiment.

Run from the checkout: ``.venv/bin/python scripts/example-plots.py``. It runs the quick form
(``--skill ... --baseline none``) in a temporary project and writes docs/images/plots-*.svg.
Tests never run it: they must not write into the checkout.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from sevro_core.reporting.plots import figures_for_run
from sevro_core.testing import SevroProject

CHECKOUT = Path(__file__).resolve().parent.parent
IMAGES = CHECKOUT / "docs" / "images"
SKILL_PATH = ".agents/skills/notes/SKILL.md"
HELPED = (
    f"if test -f {SKILL_PATH}; then printf '## Highlights\\n' > NOTES.md; "
    "else echo notes > NOTES.md; fi"
)


def main() -> int:
    with tempfile.TemporaryDirectory() as temporary:
        project = SevroProject(Path(temporary).resolve())
        project.skill("skills/notes", "notes", "Release notes with a Highlights heading.")
        for case_id in ("notes", "changelog"):
            project.case(
                f"cases/{case_id}.json",
                id=case_id,
                checks=[
                    {
                        "id": "highlights",
                        "grader": "sevro.shell",
                        "configuration": {"run": "grep -q '^## Highlights' NOTES.md"},
                    }
                ],
            )
        project.script(
            default=[[{"run": {"command": HELPED}}, {"reply": {"text": "done"}}]],
        )
        done = subprocess.run(
            [sys.executable, "-m", "sevro_core", "run", "cases", "--skill", "skills/notes",
             "--host-config", "host.json", "--baseline", "none", "--trials", "5", "--json",
             "--results-root", str(project.results)],
            cwd=project.root, capture_output=True, text=True, check=False,
        )  # fmt: skip
        evidence = json.loads(done.stdout)["evidencePath"]
        if evidence is None:
            print(done.stderr, file=sys.stderr)
            return 1
        figures = figures_for_run(Path(evidence).parent)
    IMAGES.mkdir(parents=True, exist_ok=True)
    names = {
        "passRates": "plots-pass-rates.svg",
        "transitions:baseline..candidate": "plots-transitions.svg",
        "durations": "plots-durations.svg",
    }
    for key, name in names.items():
        (IMAGES / name).write_text(figures[key] + "\n", encoding="utf-8")
        print(f"wrote docs/images/{name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
