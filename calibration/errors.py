"""The one error calibration raises on purpose; its message says what failed and what to try."""

from __future__ import annotations

from common.errors import DroneCatsError


class CalibrationError(DroneCatsError):
    """Board not found, wrong pattern size, too few views, poor coverage, or an unusable source."""
