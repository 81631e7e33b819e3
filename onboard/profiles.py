"""Flight profiles: the controller constants, one typed struct per airframe/setting.

The built-in ones are tabled in docs/controller.md#flight-profiles.

    profile = flight_profile("outdoor")          # built-in: outdoor, indoor, tello
    profile = flight_profile("my_profile.yaml")  # or a YAML/TOML file with the same fields

A file may name a built-in with `base: indoor` and override only some fields.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from common.camera import CameraProfile, camera_profile
from common.config import read_mapping
from common.errors import ConfigError


class FlightProfile(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    name: str
    camera: str  # a built-in camera profile name or a camera YAML path (common.camera)
    cap_m: float  # longest move of one `go` step
    speed_m_s: float  # fixed speed of every move
    slow_band_m: float  # model depth below this scales the step by slow_factor
    stop_band_m: float  # model depth below this brakes: no move at all
    slow_factor: float = 0.6
    deadband_deg: float = 8.0  # horizontal bearings within ±this are flown without a turn
    yaw_rate_deg_s: float = 60.0
    altitude_hold_ratio: float = 0.15  # |up| < ratio * horizontal distance -> up = 0
    rotate_limit_deg: float = 90.0  # `rotate` angles are clamped to ±this
    takeoff_altitude_m: float | None = None  # None: the vehicle adapter's own default
    airframe_scale: float = 1.0  # informative for the simulator (indoor airframes are half size)

    def __post_init__(self) -> None:
        positive = {
            "cap_m": self.cap_m,
            "speed_m_s": self.speed_m_s,
            "yaw_rate_deg_s": self.yaw_rate_deg_s,
            "rotate_limit_deg": self.rotate_limit_deg,
            "airframe_scale": self.airframe_scale,
        }
        for field, value in positive.items():
            if not value > 0:
                raise ConfigError(f"flight profile {self.name}: {field}={value} must be > 0")
        if not 0 <= self.stop_band_m <= self.slow_band_m:
            raise ConfigError(
                f"flight profile {self.name}: need 0 <= stop_band_m ({self.stop_band_m}) "
                f"<= slow_band_m ({self.slow_band_m})"
            )
        if not 0 < self.slow_factor <= 1:
            raise ConfigError(f"flight profile {self.name}: slow_factor={self.slow_factor} must be in (0, 1]")
        if not 0 <= self.deadband_deg < 180:
            raise ConfigError(
                f"flight profile {self.name}: deadband_deg={self.deadband_deg} must be in [0, 180)"
            )
        if self.altitude_hold_ratio < 0:
            raise ConfigError(
                f"flight profile {self.name}: altitude_hold_ratio={self.altitude_hold_ratio} must be >= 0"
            )
        if self.takeoff_altitude_m is not None and not self.takeoff_altitude_m > 0:
            raise ConfigError(
                f"flight profile {self.name}: takeoff_altitude_m={self.takeoff_altitude_m} must be > 0"
            )

    @property
    def max_move_duration_s(self) -> float:
        return self.cap_m / self.speed_m_s

    def camera_profile(self) -> CameraProfile:
        return camera_profile(self.camera)


# The table of docs/controller.md#flight-profiles. [002 A.2] outdoor/indoor, [002 A.4] tello.
BUILTIN_FLIGHT_PROFILES: dict[str, FlightProfile] = {
    "outdoor": FlightProfile(
        name="outdoor", camera="outdoor", cap_m=3.0, speed_m_s=1.2, slow_band_m=5.0, stop_band_m=2.0
    ),
    "indoor": FlightProfile(
        name="indoor",
        camera="indoor",
        cap_m=1.5,
        speed_m_s=0.6,
        slow_band_m=2.5,
        stop_band_m=1.0,
        airframe_scale=0.5,
    ),
    "tello": FlightProfile(
        name="tello",
        camera="tello",
        cap_m=1.5,
        speed_m_s=0.6,
        slow_band_m=2.5,
        stop_band_m=1.0,
        takeoff_altitude_m=1.5,
    ),
}


def load_flight_profile(path: str | Path) -> FlightProfile:
    """A profile file: every field, or `base: <built-in>` plus the fields that differ."""
    path = Path(path)
    data = read_mapping(path)
    data.setdefault("name", path.stem)
    base_name = data.pop("base", None)
    if base_name is not None:
        if base_name not in BUILTIN_FLIGHT_PROFILES:
            raise ConfigError(
                f"flight profile {path}: base={base_name!r} is not one of {sorted(BUILTIN_FLIGHT_PROFILES)}"
            )
        data = {**msgspec.to_builtins(BUILTIN_FLIGHT_PROFILES[base_name]), **data}
    try:
        return msgspec.convert(data, FlightProfile, strict=False)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"flight profile {path}: {exc}") from None


def flight_profile(name_or_path: str) -> FlightProfile:
    """A built-in profile by name, or a YAML/TOML file."""
    if name_or_path in BUILTIN_FLIGHT_PROFILES:
        return BUILTIN_FLIGHT_PROFILES[name_or_path]
    if not Path(name_or_path).exists():
        raise ConfigError(
            f"unknown flight profile {name_or_path!r}: not one of {sorted(BUILTIN_FLIGHT_PROFILES)} "
            "and no such file"
        )
    return load_flight_profile(name_or_path)
