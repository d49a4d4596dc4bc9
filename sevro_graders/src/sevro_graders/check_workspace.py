"""Where a command check runs: the agent's final workspace, or a pristine copy of the fixture.

A verifier that grades only the answer (``SEVRO_FINAL_OUTPUT``) must not be influenced by files
the candidate left or forged in the workspace; ``"workspace": "pristine"`` runs it in a fresh
copy of the case's fixture, materialised as before the candidate ran and removed afterwards.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

from sevro_core.api import GradingError, TrialIsolation, TrialView

FINAL = "final"
PRISTINE = "pristine"
WORKSPACES = (FINAL, PRISTINE)


@contextmanager
def check_isolation(view: TrialView, workspace: str) -> Iterator[TrialIsolation]:
    """The sandbox the check's command runs in; a pristine copy that cannot be made is a
    grading error, never the agent's workspace instead."""
    if view.isolation is None:
        raise GradingError("command checks run only inside the trial's sandbox, and none was given")
    if workspace == FINAL:
        yield view.isolation
        return
    if view.pristine is None:
        raise GradingError("no pristine copy of the fixture can be made outside a trial")
    stack = ExitStack()
    try:
        isolation = stack.enter_context(view.pristine())
    except Exception as exc:  # a fixture that cannot be materialised again: never a pass
        raise GradingError(f"the pristine copy of the fixture could not be made: {exc}") from None
    with stack:
        yield isolation
