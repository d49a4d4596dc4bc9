"""What one ``sevro`` invocation ended with, run in a subprocess or in-process by the kit."""

from __future__ import annotations

import json
from typing import Any

from attrs import frozen


@frozen
class CliResult:
    exit_code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)
