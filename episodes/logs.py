"""The episode log format (docs/logs.md): typed lines and a line writer (common.logformat), and
tolerant readers.

One directory per episode run holds episode.json, steps.jsonl, declarations.jsonl and
trace.jsonl. The field names are those of docs/logs.md; tools may add fields (readers ignore keys they do not
know), never rename. Two fields are this project's additions, both optional:
- `collided` (steps and trace lines): true while the drone is in contact with something; the
  verifier counts a collision at every false/absent -> true transition per drone.
- `judged` (declarations): the operator's "accept"/"reject" in real flight.

Readers never drop a line silently: every line that cannot be parsed comes back as a
LineProblem with its file and line number; a last line without its newline is reported as
truncated.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import msgspec

# The line types and the writer live in common so that the onboard flight recorder, which may not
# import episodes, writes exactly what this module reads. Re-exported here for episode tools.
from common.errors import RecordError
from common.logformat import (
    DECLARATIONS_FILE,
    EPISODE_FILE,
    STEPS_FILE,
    TRACE_FILE,
    DeclarationLine,
    JsonlWriter,
    LogLine,
    PoseList,
    StepLine,
    TraceLine,
)
from episodes.records import EpisodeRecord, load_record

__all__ = [
    "DECLARATIONS_FILE",
    "EPISODE_FILE",
    "STEPS_FILE",
    "TRACE_FILE",
    "DeclarationLine",
    "EpisodeLogWriter",
    "EpisodeLogs",
    "JsonlWriter",
    "LineProblem",
    "LogLine",
    "PoseList",
    "StepLine",
    "TraceLine",
    "is_episode_dir",
    "read_episode",
    "read_jsonl",
    "write_lines",
]

log = logging.getLogger(__name__)

L = TypeVar("L", StepLine, DeclarationLine, TraceLine)


class LineProblem(msgspec.Struct, frozen=True):
    file: str
    line: int  # 1-based; 0 for a problem with the whole file
    reason: str
    text: str = ""  # the start of the offending line


def read_jsonl(
    path: str | Path, line_type: type[L], missing_ok: bool = False
) -> tuple[list[L], list[LineProblem]]:
    """Every parsable line of a JSONL file, and a problem for every other non-blank line."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        if missing_ok:
            return [], []
        return [], [LineProblem(path.name, 0, "file is missing")]
    except OSError as exc:
        return [], [LineProblem(path.name, 0, f"cannot read: {exc.strerror}")]
    decoder = msgspec.json.Decoder(line_type)
    lines = data.split(b"\n")
    complete_last = data.endswith(b"\n")
    records: list[L] = []
    problems: list[LineProblem] = []
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            records.append(decoder.decode(raw))
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            last = number == len(lines) and not complete_last
            reason = f"truncated last line: {exc}" if last else str(exc)
            text = raw[:200].decode("utf-8", errors="replace")
            problems.append(LineProblem(path.name, number, reason, text))
    for problem in problems:
        log.warning("%s:%d: %s", path, problem.line, problem.reason)
    return records, problems


@dataclass
class EpisodeLogs:
    """Everything the verifier reads from one episode directory."""

    directory: Path
    record: EpisodeRecord | None
    steps: list[StepLine] = field(default_factory=list)
    declarations: list[DeclarationLine] = field(default_factory=list)
    trace: list[TraceLine] = field(default_factory=list)
    problems: list[LineProblem] = field(default_factory=list)
    record_error: str | None = None

    @property
    def drones(self) -> list[str]:
        names: dict[str, None] = {}
        if self.record is not None:
            names.update((d.name, None) for d in self.record.drones)
        lines: list[LogLine] = [*self.steps, *self.trace, *self.declarations]
        for line in lines:
            names.setdefault(line.drone, None)
        return list(names)


def is_episode_dir(path: str | Path) -> bool:
    path = Path(path)
    return any((path / name).exists() for name in (EPISODE_FILE, STEPS_FILE, TRACE_FILE))


def read_episode(directory: str | Path) -> EpisodeLogs:
    """Read one episode directory. A missing declarations.jsonl means no declarations; a missing
    steps.jsonl or trace.jsonl, and an invalid episode.json, are reported as problems."""
    directory = Path(directory)
    record: EpisodeRecord | None = None
    record_error: str | None = None
    problems: list[LineProblem] = []
    try:
        record = load_record(directory / EPISODE_FILE)
    except RecordError as exc:
        record_error = str(exc)
        problems.append(LineProblem(EPISODE_FILE, 0, record_error))
    steps, p_steps = read_jsonl(directory / STEPS_FILE, StepLine)
    declarations, p_decl = read_jsonl(directory / DECLARATIONS_FILE, DeclarationLine, missing_ok=True)
    trace, p_trace = read_jsonl(directory / TRACE_FILE, TraceLine)
    return EpisodeLogs(
        directory, record, steps, declarations, trace, problems + p_steps + p_decl + p_trace, record_error
    )


class EpisodeLogWriter:
    """The three log files of one episode directory, opened for appending; declarations are fsynced."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        self.steps = JsonlWriter(self.directory / STEPS_FILE)
        self.declarations = JsonlWriter(self.directory / DECLARATIONS_FILE, fsync=True)
        self.trace = JsonlWriter(self.directory / TRACE_FILE)

    def open(self) -> EpisodeLogWriter:
        for writer in (self.steps, self.declarations, self.trace):
            writer.open()
        return self

    def step(self, line: StepLine) -> None:
        self.steps.append(line)

    def declaration(self, line: DeclarationLine) -> None:
        self.declarations.append(line)

    def sample(self, line: TraceLine) -> None:
        self.trace.append(line)

    def close(self) -> None:
        for writer in (self.steps, self.declarations, self.trace):
            writer.close()

    def __enter__(self) -> EpisodeLogWriter:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()


def write_lines(path: str | Path, lines: Iterable[LogLine], fsync: bool = False) -> None:
    """Append several lines at once (tests, converters)."""
    with JsonlWriter(path, fsync=fsync) as writer:
        for line in lines:
            writer.append(line)
