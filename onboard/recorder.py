"""The flight recorder: the episode log format, written as it happens.

Every line is written whole in one system call when it happens and declarations are fsynced, so
killing the process loses at most the line being written. episode.json is replaced atomically
(write, fsync, rename). Saved frames rotate by total size so a Jetson disk never fills, and a full
disk stops the frames, not the flight (FlightRecorder). events.jsonl (this project's addition) holds
safety transitions, clamps and discarded replies, each with what was asked and what was done.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from common.errors import ConfigError, SafetyError
from common.logformat import (
    DECLARATIONS_FILE,
    EPISODE_FILE,
    STEPS_FILE,
    TRACE_FILE,
    DeclarationLine,
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
    # At most this many saved frames per second of episode time (0: every decision's frame). Real-time
    # runs with a fast pilot would otherwise write tens of frames a second (dronecats onboard sets 2).
    frames_max_hz: float = 0.0
    trace_hz: float = 2.0

    def __post_init__(self) -> None:
        check_limits(self)  # onboard.config_limits: every number's valid range


class LogFileGone(OSError):
    """The file behind an open log was deleted (its directory removed mid-flight): lines written on
    would land in an unlinked inode and vanish with the process."""


class _Lines:
    """One append-only JSONL file that never leaves half a line: each line goes out in one write on an
    O_APPEND descriptor, and a write that fails part-way (ENOSPC) is cut back to the last whole line.
    With fsync=True every line is also forced to disk (declarations). Thread-safe; raises OSError."""

    def __init__(self, path: Path, fsync: bool = False) -> None:
        self.path = path
        self.fsync = fsync
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._lock = threading.Lock()

    def write(self, data: bytes) -> None:
        with self._lock:
            if self._fd < 0:
                raise OSError(errno.EBADF, "closed", str(self.path))
            stat = os.fstat(self._fd)
            if stat.st_nlink == 0:
                raise LogFileGone(errno.ENOENT, "deleted while open", str(self.path))
            size = stat.st_size
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(self._fd, view) :]
                if self.fsync:
                    os.fsync(self._fd)
            except OSError:
                with contextlib.suppress(OSError):
                    os.ftruncate(self._fd, size)
                raise

    def gone(self) -> bool:
        with self._lock:
            return self._fd >= 0 and os.fstat(self._fd).st_nlink == 0

    def reopen(self, path: Path) -> None:
        """The same log at `path` (re-created, or in the fallback directory), appended from here."""
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
            self._fd, self.path = fd, path

    def close(self) -> None:
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1


DiskErrorSink = Callable[[str, str], None]


class FlightRecorder:
    """Writes the episode's logs as they happen, and degrades instead of failing.

    A directory that cannot be written is refused at once (ConfigError naming it). During the flight a
    write error (ENOSPC, EIO, ...) never reaches the caller: frames stop first (`frames_enabled`), and
    saved frames are deleted, oldest first, to make room for the JSONL logs, which go on as long as the
    disk takes them. Each kind of loss ("frames", "logs") is reported once to `on_disk_error(what,
    error)` (the runtime raises a `disk` safety event)."""

    def __init__(self, directory: str | Path, config: RecorderConfig | None = None) -> None:
        self.directory = Path(directory)
        self.config = config or RecorderConfig()
        self._encoder = msgspec.json.Encoder()
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            self._steps = _Lines(self.directory / STEPS_FILE)
            self._declarations = _Lines(self.directory / DECLARATIONS_FILE, fsync=True)
            self._trace = _Lines(self.directory / TRACE_FILE)
            self._events = _Lines(self.directory / EVENTS_FILE)
        except OSError as exc:
            raise ConfigError(
                f"log dir {str(self.directory)!r} cannot be written: {exc.strerror or exc}"
            ) from None
        self._metadata: dict[str, Any] = {}
        self._meta_lock = threading.Lock()
        self._frames: deque[tuple[Path, int]] = deque()
        self._frames_bytes = 0
        self._frames_lock = threading.Lock()
        self._last_frame_t: float | None = None
        self._last_trace_t: dict[str, float] = {}
        self.frames_enabled = self.config.save_frames
        self.on_disk_error: DiskErrorSink | None = None
        self.disk_errors: dict[str, str] = {}  # what -> first error
        self.lines_lost = 0
        self._metadata_written = False
        self._dir_lock = threading.Lock()
        self.incomplete_logs: set[str] = set()  # files whose lines before a re-creation are lost

    # ---- episode.json -------------------------------------------------------------------------
    def write_metadata(self, **fields: object) -> None:
        """Merge fields (dicts deeply) into episode.json and replace the file atomically.

        The first write is the arming check of the log dir: it raises SafetyError naming the dir.
        Later ones degrade (a vanished or unwritable directory re-created or replaced first, then room
        made by deleting frames, then "logs" reported)."""
        if self._metadata_written:
            self._check_directory()
        with self._meta_lock:
            _deep_update(self._metadata, fields)
            data = json.dumps(self._metadata, indent=2, sort_keys=True, default=_json_default)
            first = not self._metadata_written
            try:
                self._retry_with_room(lambda: self._replace_metadata(data))
            except OSError as exc:
                if first:
                    raise SafetyError(
                        f"log dir {str(self.directory)!r} cannot be written ({exc.strerror or exc}): "
                        "refusing to arm"
                    ) from None
                self._disk_error("logs", f"episode.json: {exc}")
                return
            self._metadata_written = True

    def _replace_metadata(self, data: str) -> None:
        tmp = self.directory / (EPISODE_FILE + ".tmp")
        try:
            with open(tmp, "w") as f:
                f.write(data + "\n")
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.directory / EPISODE_FILE)
        except OSError:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise

    # ---- log lines ----------------------------------------------------------------------------
    def step(self, line: StepLine) -> None:
        self._append(self._steps, self._encoder.encode(line) + b"\n")

    def declaration(self, line: DeclarationLine) -> None:
        self._append(self._declarations, self._encoder.encode(line) + b"\n")

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
        return self._append(self._trace, self._encoder.encode(line) + b"\n")

    def event(self, kind: str, t: float, drone: str, **fields: object) -> None:
        data = {"t": t, "drone": drone, "event": kind, **fields, "wall_time": time.time()}
        self._append(self._events, (json.dumps(data, default=_json_default) + "\n").encode())

    def _append(self, lines: _Lines, data: bytes) -> bool:
        """One whole line, or none (counted in lines_lost, reported once as "logs")."""
        try:
            try:
                self._retry_with_room(lambda: lines.write(data))
                return True
            except LogFileGone:
                self._check_directory()  # re-created (or the fallback): the line goes there
            self._retry_with_room(lambda: lines.write(data))
        except OSError as exc:
            self.lines_lost += 1
            self._disk_error("logs", f"{lines.path.name}: {exc}")
            return False
        return True

    def _retry_with_room(self, write: Callable[[], None]) -> None:
        """write(); on a write error stop saving frames, delete saved ones to make room, try once more."""
        try:
            write()
            return
        except LogFileGone:
            raise  # not a full disk: the directory is gone (FlightRecorder._check_directory)
        except OSError as exc:
            self._stop_frames(exc)  # (its report may itself have made room: retry in any case)
            self._free_frames()
        write()

    # ---- frames -------------------------------------------------------------------------------
    def save_frame(self, jpeg: bytes, name: str, t_s: float | None = None) -> str | None:
        """Save a JPEG under frames/, deleting the oldest beyond frames_max_bytes; the relative name
        (None: not saved, frames off by config or since a write error, or the last one saved less than
        1/frames_max_hz before t_s)."""
        if not self.frames_enabled:
            return None
        if self.config.frames_max_hz > 0 and t_s is not None:
            # 1 ms of slack: decisions exactly 1/hz apart (min_decision_period_s 0.5 at 2 Hz) all count.
            min_gap_s = 1.0 / self.config.frames_max_hz - 1e-3
            if self._last_frame_t is not None and t_s - self._last_frame_t < min_gap_s:
                return None
            self._last_frame_t = t_s
        self._check_directory()
        folder = self.directory / FRAMES_DIR
        path = folder / name
        try:
            folder.mkdir(exist_ok=True)
            path.write_bytes(jpeg)
        except OSError as exc:
            with contextlib.suppress(OSError):
                path.unlink()
            self._stop_frames(exc)
            return None
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

    def _stop_frames(self, exc: OSError) -> None:
        if self.frames_enabled:
            self.frames_enabled = False
            self._disk_error("frames", f"{exc}: frames are no longer saved; the logs go on")

    def _free_frames(self, target_bytes: int = 256 << 10) -> bool:
        """Delete saved frames, oldest first, until about target_bytes are freed; False if none were."""
        freed = 0
        with self._frames_lock:
            while self._frames and freed < target_bytes:
                old, size = self._frames.popleft()
                self._frames_bytes -= size
                with contextlib.suppress(OSError):
                    old.unlink()
                    freed += size
        if freed:
            log.warning("disk: deleted %d bytes of saved frames to keep the logs going", freed)
        return freed > 0

    def _disk_error(self, what: str, error: str) -> None:
        with self._frames_lock:
            if what in self.disk_errors:
                return
            self.disk_errors[what] = error
        log.error("disk: %s: %s", what, error)
        sink = self.on_disk_error
        if sink is not None:
            try:
                sink(what, error)
            except Exception:
                log.exception("disk error sink failed")

    def _all_lines(self) -> tuple[_Lines, ...]:
        return (self._steps, self._declarations, self._trace, self._events)

    def _check_directory(self) -> None:
        """The log directory vanished (rm -rf) or became unwritable (chmod) mid-flight: re-create it, or
        move to a fallback directory when it cannot be, reopen the logs there, and say so once per
        occurrence ("log_dir"); the end-of-run record lists the logs whose earlier lines were lost."""
        with self._dir_lock:
            writable = self.directory.is_dir() and os.access(self.directory, os.W_OK | os.X_OK)
            if writable and not any(lines.gone() for lines in self._all_lines()):
                return
            lost = [lines.path.name for lines in self._all_lines() if lines.gone()]
            lost += [EPISODE_FILE] if not (self.directory / EPISODE_FILE).exists() else []
            old = self.directory
            try:
                self.directory.mkdir(parents=True, exist_ok=True)
                if not os.access(self.directory, os.W_OK | os.X_OK):
                    raise PermissionError(errno.EACCES, "not writable", str(self.directory))
                how = "re-created"
            except OSError:
                self.directory = Path(tempfile.mkdtemp(prefix=f"dronecats-logs-{old.name}-"))
                lost = [lines.path.name for lines in self._all_lines()] + [EPISODE_FILE]
                how = f"cannot be written: the logs go on in {self.directory}"
            for lines in self._all_lines():
                if lines.gone() or lines.path.parent != self.directory:
                    lines.reopen(self.directory / lines.path.name)
            with self._frames_lock:  # frames saved in the old directory are gone or stay there
                self._frames.clear()
                self._frames_bytes = 0
            self.incomplete_logs.update(lost)
            recovered = {"incomplete_logs": sorted(self.incomplete_logs), "log_dir": str(self.directory)}
        error = f"log dir {old} vanished or became unwritable mid-flight: {how}; incomplete: {sorted(lost)}"
        self.disk_errors.pop("log_dir", None)  # each occurrence is news
        self._disk_error("log_dir", error)
        with self._meta_lock:  # episode.json again, whole, in its (new) place
            _deep_update(self._metadata, {"run": recovered})
            data = json.dumps(self._metadata, indent=2, sort_keys=True, default=_json_default)
            with contextlib.suppress(OSError):
                self._retry_with_room(lambda: self._replace_metadata(data))

    def close(self) -> None:
        for lines in self._all_lines():
            lines.close()


def _deep_update(into: dict[str, Any], fields: dict[str, Any]) -> None:
    for key, value in fields.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _deep_update(into[key], value)
        else:
            into[key] = value


def _json_default(value: object) -> object:
    try:
        return msgspec.to_builtins(value)
    except TypeError:
        return str(value)
