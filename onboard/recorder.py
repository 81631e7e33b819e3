"""The flight recorder: AGENT.md §6's log format, written as it happens.

Every line is flushed when written and declarations are fsynced, so killing the process loses at
most the line being written. episode.json is replaced atomically (write, fsync, rename). Saved
frames rotate by total size so a Jetson disk never fills. events.jsonl (this project's addition)
holds safety transitions, clamps and discarded replies, each with what was asked and what was done.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any

import msgspec

from common.logformat import (
    DECLARATIONS_FILE,
    EPISODE_FILE,
    STEPS_FILE,
    TRACE_FILE,
    DeclarationLine,
    JsonlWriter,
    StepLine,
    TraceLine,
)
from onboard.config_limits import check_limits

log = logging.getLogger(__name__)

EVENTS_FILE = "events.jsonl"
FRAMES_DIR = "frames"


class RecorderConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    save_frames: bool = True
    frames_max_bytes: int = 512 * 1024 * 1024  # oldest saved frames are deleted beyond this
    trace_hz: float = 2.0

    def __post_init__(self) -> None:
        check_limits(self)  # onboard.config_limits: every number's valid range


class FlightRecorder:
    def __init__(self, directory: str | Path, config: RecorderConfig | None = None) -> None:
        self.directory = Path(directory)
        self.config = config or RecorderConfig()
        self.directory.mkdir(parents=True, exist_ok=True)
        self._steps = JsonlWriter(self.directory / STEPS_FILE).open()
        self._declarations = JsonlWriter(self.directory / DECLARATIONS_FILE, fsync=True).open()
        self._trace = JsonlWriter(self.directory / TRACE_FILE).open()
        self._events = (self.directory / EVENTS_FILE).open("ab")
        self._events_lock = threading.Lock()
        self._metadata: dict[str, Any] = {}
        self._meta_lock = threading.Lock()
        self._frames: deque[tuple[Path, int]] = deque()
        self._frames_bytes = 0
        self._frames_lock = threading.Lock()
        self._last_trace_t: dict[str, float] = {}

    # ---- episode.json -------------------------------------------------------------------------
    def write_metadata(self, **fields: Any) -> None:
        """Merge fields (dicts deeply) into episode.json and replace the file atomically."""
        with self._meta_lock:
            _deep_update(self._metadata, fields)
            data = json.dumps(self._metadata, indent=2, sort_keys=True, default=_json_default)
            tmp = self.directory / (EPISODE_FILE + ".tmp")
            with open(tmp, "w") as f:
                f.write(data + "\n")
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.directory / EPISODE_FILE)

    # ---- log lines ----------------------------------------------------------------------------
    def step(self, line: StepLine) -> None:
        self._steps.append(line)

    def declaration(self, line: DeclarationLine) -> None:
        self._declarations.append(line)

    def trace_due(self, line: TraceLine) -> bool:
        """Whether trace_hz allows a sample for this drone at line.t."""
        last = self._last_trace_t.get(line.drone)
        return last is None or line.t - last >= 1.0 / self.config.trace_hz - 1e-9

    def mark_trace(self, line: TraceLine) -> None:
        """Reserve this sample's slot (the line itself is written later, e.g. by a worker thread)."""
        self._last_trace_t[line.drone] = line.t

    def trace(self, line: TraceLine, force: bool = False) -> bool:
        """Write a trace sample if trace_hz allows one for this drone now; True when written."""
        if not force and not self.trace_due(line):
            return False
        self._last_trace_t[line.drone] = line.t
        self._trace.append(line)
        return True

    def event(self, kind: str, t: float, drone: str, **fields: Any) -> None:
        data = {"t": t, "drone": drone, "event": kind, **fields, "wall_time": time.time()}
        payload = (json.dumps(data, default=_json_default) + "\n").encode()
        with self._events_lock:
            self._events.write(payload)
            self._events.flush()

    # ---- frames -------------------------------------------------------------------------------
    def save_frame(self, jpeg: bytes, name: str) -> str | None:
        """Save a JPEG under frames/, deleting the oldest beyond frames_max_bytes; the relative name."""
        if not self.config.save_frames:
            return None
        folder = self.directory / FRAMES_DIR
        folder.mkdir(exist_ok=True)
        path = folder / name
        path.write_bytes(jpeg)
        with self._frames_lock:
            self._frames.append((path, len(jpeg)))
            self._frames_bytes += len(jpeg)
            while self._frames_bytes > self.config.frames_max_bytes and len(self._frames) > 1:
                old, size = self._frames.popleft()
                self._frames_bytes -= size
                try:
                    old.unlink()
                except OSError as exc:
                    log.warning("cannot delete old frame %s: %s", old, exc)
        return f"{FRAMES_DIR}/{name}"

    def close(self) -> None:
        for writer in (self._steps, self._declarations, self._trace):
            writer.close()
        with self._events_lock:
            self._events.close()


def _deep_update(into: dict[str, Any], fields: dict[str, Any]) -> None:
    for key, value in fields.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _deep_update(into[key], value)
        else:
            into[key] = value


def _json_default(value: Any) -> Any:
    try:
        return msgspec.to_builtins(value)
    except TypeError:
        return str(value)
