"""Helpers shared by the tests (not collected: no `test_` file names). Import them as `tests.support.X`."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
