"""The ground station's whole session as an MCAP file, like a bag (`dronecats gs --record-mcap PATH`).

A FleetState listener: every event the session log holds (instructions, orders, acks, steps,
declarations, judgements, link changes ...: FleetState.session_log, the entries `--export` writes as
JSON lines) plus what it leaves to the drones' own logs, each drone's telemetry and frames. Channels,
with the Foxglove schemas of the episode export (episodes.export.foxglove_schemas) so Foxglove shows
them with no custom panel:

- `/tf` (foxglove.FrameTransform): "world" -> "ned" once (common.viewer_frames), then "ned" -> DRONE
  per telemetry message;
- `/camera/DRONE/image` (foxglove.CompressedImage): every frame received, the JPEG unchanged;
- `/telemetry/DRONE` (JSON): the telemetry message's fields;
- `/session/KIND/DRONE` (JSON; DRONE "fleet" for a fleet-wide entry): one per session-log entry;
- `/log` (foxglove.Log): the same entries as one line each.

Stamps are the ground station's wall clock when the event arrived, kept monotonic per file. The
listener runs on the link's threads: it only queues (bounded: a full queue drops and counts), and a
writer thread of its own writes. Needs the `review` extra (mcap).
"""

from __future__ import annotations

import base64
import logging
import queue
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
from mcap.writer import CompressionType, Writer

from common.messages import TelemetryMessage
from common.viewer_frames import NED_FRAME, NED_IN_WORLD, WORLD_FRAME, heading_quat, xyzw
from episodes.export.foxglove_schemas import LOG_LEVELS, frame_transform, schema_bytes, time_json
from ground_station.fleet.state import FleetEvent, FleetState, FrameRecord

log = logging.getLogger(__name__)

QUEUE_EVENTS = 4096  # ~ a minute of 4 drones' telemetry and frames with the writer stalled
_WARNING_KINDS = frozenset({"safety", "link", "refused"})


@dataclass(frozen=True)
class _Queued:
    t_ns: int
    event: FleetEvent | None  # None: a wake-up to copy new session-log entries


class SessionMcap:
    """Writes a FleetState's session to `path` from its own thread until `close()`."""

    def __init__(self, state: FleetState, path: str | Path) -> None:
        self.state = state
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = self.path.open("wb")
        self._writer = Writer(self._file, compression=CompressionType.ZSTD)
        self._writer.start(profile="", library="dronecats gs --record-mcap")
        self._schemas: dict[str, int] = {}
        self._channels: dict[str, int] = {}
        self._sequence: dict[str, int] = {}
        self._encoder = msgspec.json.Encoder()
        self._queue: queue.Queue[_Queued] = queue.Queue(maxsize=QUEUE_EVENTS)
        self._logged = 0  # session-log entries written so far
        self._last_ns = 0
        self.counts: dict[str, int] = {}
        self.dropped = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="record-mcap", daemon=True)
        t0 = self._stamp(time.time_ns())
        self._add(
            "/tf",
            "foxglove.FrameTransform",
            frame_transform(t0, WORLD_FRAME, NED_FRAME, (0, 0, 0), xyzw(NED_IN_WORLD)),
            t0,
        )
        self._thread.start()
        state.add_listener(self.on_event)

    def on_event(self, event: FleetEvent) -> None:
        """FleetState's listener (any thread): queue and return."""
        try:
            self._queue.put_nowait(_Queued(time.time_ns(), event))
        except queue.Full:
            self.dropped += 1

    def close(self) -> Path:
        """Write what is queued and the session log's last entries, and finish the file."""
        self.state.remove_listener(self.on_event)
        self._stop.set()
        self._thread.join()
        self._session_entries()
        self._writer.add_metadata("session", {"dropped_events": str(self.dropped)})
        self._writer.finish()
        self._file.close()
        if self.dropped:
            log.warning("--record-mcap %s: %d events dropped (writer behind)", self.path, self.dropped)
        return self.path

    # ---- the writer thread ---------------------------------------------------------------------
    def _run(self) -> None:
        while True:
            try:
                item = self._queue.get(timeout=0.1)
            except queue.Empty:
                if self._stop.is_set():
                    return
                continue
            try:
                self._write(item)
            except Exception:  # one bad record never ends the recording
                log.exception("--record-mcap: %s not written", item.event.kind if item.event else "entry")

    def _write(self, item: _Queued) -> None:
        event = item.event
        if event is None:
            return
        if event.kind == "telemetry" and isinstance(event.record, TelemetryMessage):
            t_ns = self._stamp(item.t_ns)
            body, drone = event.record, event.drone or "drone"
            p = body.pose_ned
            tf = frame_transform(t_ns, NED_FRAME, drone, (p.x_m, p.y_m, p.z_m), xyzw(heading_quat(p.yaw_deg)))
            self._add("/tf", "foxglove.FrameTransform", tf, t_ns)
            self._add(f"/telemetry/{drone}", "dronecats.telemetry", msgspec.to_builtins(body), t_ns)
        elif event.kind == "frame" and isinstance(event.record, FrameRecord):
            t_ns = self._stamp(item.t_ns)
            frame, drone = event.record, event.drone or "drone"
            image = {
                "timestamp": time_json(t_ns),
                "frame_id": f"{drone}/camera",
                "data": base64.b64encode(frame.jpeg).decode("ascii"),
                "format": "jpeg",
            }
            self._add(f"/camera/{drone}/image", "foxglove.CompressedImage", image, t_ns)
        self._session_entries()

    def _session_entries(self) -> None:
        """The session log's entries since the last call, on their own wall stamps (`wall_s`)."""
        with self.state.lock:
            entries = self.state.session_log[self._logged :]
            self._logged += len(entries)
        for entry in entries:
            t_ns = self._stamp(round(float(entry.get("wall_s", time.time())) * 1e9))
            kind, drone = str(entry.get("kind")), entry.get("drone") or "fleet"
            fields = msgspec.to_builtins(entry, str_keys=True, enc_hook=str)
            self._add(f"/session/{kind}/{drone}", f"dronecats.{kind}", fields, t_ns)
            level = LOG_LEVELS["warning"] if kind in _WARNING_KINDS else LOG_LEVELS["info"]
            text = " ".join(f"{k}={v}" for k, v in fields.items() if k not in ("wall_s", "kind", "drone"))
            line = {"timestamp": time_json(t_ns), "level": level, "message": text, "name": f"{drone}/{kind}"}
            self._add("/log", "foxglove.Log", {**line, "file": "", "line": 0}, t_ns)

    def _stamp(self, t_ns: int) -> int:
        """Never before the last message written: MCAP readers expect each channel in time order."""
        self._last_ns = max(self._last_ns, t_ns)
        return self._last_ns

    def _add(self, topic: str, schema_name: str, payload: Any, t_ns: int) -> None:
        channel = self._channels.get(topic)
        if channel is None:
            schema = self._schemas.get(schema_name)
            if schema is None:
                schema = self._writer.register_schema(schema_name, "jsonschema", schema_bytes(schema_name))
                self._schemas[schema_name] = schema
            channel = self._writer.register_channel(topic, "json", schema)
            self._channels[topic] = channel
        seq = self._sequence.get(topic, 0)
        self._sequence[topic] = seq + 1
        self._writer.add_message(channel, t_ns, self._encoder.encode(payload), t_ns, seq)
        self.counts[topic] = self.counts.get(topic, 0) + 1
