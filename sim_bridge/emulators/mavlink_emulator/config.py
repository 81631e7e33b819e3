"""How one emulated autopilot is set up (the CLI's --mavlink options, the tests' rigs)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class MavlinkEmulatorConfig:
    dialect: str = "px4"  # or "ardupilot"
    companion: tuple[str, int] = ("127.0.0.1", 14540)
    telemetry_hz: float = 20.0  # the highest rate any stream is sent at (CPU on a shared machine)
    params: dict[str, float] = field(default_factory=dict)  # firmware parameters other than the defaults
    rc_present: bool = True  # an RC transmitter is bound (PX4's fallback modes need one)
    video_dest: tuple[str, int] | None = None
    video_fps: float = 10.0
    refused: dict[int, tuple[int, str]] = field(default_factory=dict)  # command -> (MAV_RESULT, text)
