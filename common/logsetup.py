"""Logging set-up. Only the command line calls this; libraries just use logging.getLogger(__name__)."""

from __future__ import annotations

import logging
import sys


def configure_logging(level: str = "INFO", log_file: str | None = None) -> None:
    fmt = "%(asctime)s.%(msecs)03d %(levelname)-7s %(name)s: %(message)s"
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if log_file:
        handlers.append(logging.FileHandler(log_file))
    logging.basicConfig(level=level.upper(), format=fmt, datefmt="%H:%M:%S", handlers=handlers, force=True)
