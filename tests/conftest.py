"""Shared test configuration; sevro's own test kit (sevro_core.testing) provides the fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent

pytest_plugins = ["tests.checkout_guard"]


@pytest.fixture
def repo_root() -> Path:
    return REPO_ROOT
