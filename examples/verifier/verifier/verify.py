"""A Skivolve-style objective verifier for examples/verifier/cases/sum-report.json.

It runs in the trial's sandbox after the agent finished, with the workspace as its working
directory. The gold answer lives beside it, in the evaluator directory the agent never sees
($SEVRO_EVALUATOR_VERIFIER); the agent's final message is the file $SEVRO_FINAL_OUTPUT. It prints
one JSON object, {"passed": ..., "assertions": [{"id", "passed", "evidence"}]}, and exits 0:
failed assertions fail the check, and only a broken verifier exits non-zero.
"""

import json
import os
from pathlib import Path


def read(path: Path) -> str | None:
    try:
        return path.read_text("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def main() -> None:
    gold = json.loads((Path(os.environ["SEVRO_EVALUATOR_VERIFIER"]) / "expected.json").read_text())
    assertions = []

    total = read(Path("total.txt"))
    assertions.append(
        {
            "id": "total-file",
            "passed": total == f"{gold['total']}\n",
            "evidence": f"total.txt holds {total!r}" if total is not None else "no total.txt",
        }
    )

    final = os.environ.get("SEVRO_FINAL_OUTPUT")
    answer = read(Path(final)) if final else None
    try:
        reported = json.loads(answer) if answer is not None else None
    except ValueError:
        reported = None
    ok = isinstance(reported, dict) and reported == {"total": gold["total"]}
    assertions.append(
        {
            "id": "final-answer",
            "passed": ok,
            "evidence": "the reply is the expected JSON" if ok else "not the expected JSON",
        }
    )

    numbers = read(Path("numbers.txt"))
    assertions.append(
        {
            "id": "input-untouched",
            "passed": numbers == gold["numbers"],
            "evidence": "numbers.txt unchanged" if numbers == gold["numbers"] else "changed",
        }
    )
    print(json.dumps({"passed": all(a["passed"] for a in assertions), "assertions": assertions}))


if __name__ == "__main__":
    main()
