"""The baseline vision pilot (classical OpenCV; no model, no ground truth)."""

from models.baseline.pilot import BaselinePilot

__all__ = ["BaselinePilot"]
