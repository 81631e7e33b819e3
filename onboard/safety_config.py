"""The safety governor's limits (the `safety.` section of the onboard config), in one frozen struct.

Its own module so that every part of the governor (onboard.safety_envelope, onboard.safety_watchdogs,
onboard.safety_modes) and every caller that only needs the numbers (onboard.goto, the config) can
import it without the governor.
"""

from __future__ import annotations

import msgspec

from onboard.config_limits import check_limits

STALL_POLICIES = ("hold", "land", "continue")


class SafetyConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    geofence_radius_m: float = 150.0  # horizontal distance from home
    altitude_floor_m: float = 0.5  # above home; no descent below it while flying
    altitude_ceiling_m: float = 60.0
    max_horizontal_m_s: float = 3.0
    max_vertical_m_s: float = 1.5
    max_yaw_rate_deg_s: float = 90.0
    # How far ahead the geofence looks: a setpoint that would cross the fence within this time is cut.
    lookahead_s: float = 0.5
    max_consecutive_failures: int = 5  # pilot failures (malformed, stale, backend down) before hold
    link_lost_hold_s: float = 3.0  # ground-station link lost this long -> hold
    link_lost_land_s: float = 30.0  # ... this long -> land
    battery_land_fraction: float = 0.15
    estop_action: str = "land"  # "land" or "kill"
    land_on_collision: bool = False  # default: hold and report
    # Fleet traffic (other drones' positions, when something feeds them: see set_traffic): motion that
    # would bring the drone within this horizontal distance of one inside the look-ahead is cut, unless
    # the two are this far apart in height.
    separation_m: float = 1.5
    separation_vertical_m: float = 1.0
    # A fleet mate's position this old (its report's age plus the time since it arrived) is dropped:
    # a relay that stopped must not leave phantom drones in the way. Younger ones are carried forward
    # by their velocity.
    traffic_max_age_s: float = 1.0
    # Failsafes from the time since a source was last heard (evaluated on every actuation tick):
    pilot_silence_hold_s: float = 3.0  # no valid pilot action this long (beyond a pending reply's deadline)
    frame_stale_hold_s: float = 1.0  # no fresh camera frame this long, once a read found the video stale
    telemetry_stale_land_s: float = 2.0  # no vehicle telemetry this long -> land
    # The onboard process itself did not run for this long (SIGSTOP, swap, CPU starvation, a long GC
    # pause: the actuation loop's own tick gap on the monotonic clock): a stall, not the sources'
    # silence. `on_stall` says what follows: "hold" (until vehicle, video and link are heard again
    # after it, then fly on), "land", or "continue" (logged only).
    stall_s: float = 0.5
    on_stall: str = "hold"
    # A vehicle found outside the envelope (above the ceiling, outside the fence: something outside
    # the runtime moved it, or it was there before the limits held) is flown back in at this speed.
    recover_m_s: float = 1.0
    # Obstacles the vehicle's world knows (a simulator's cars and people; onboard.safety_obstacles): the
    # drone's centre stays obstacle_clearance_m above an obstacle's top while within its footprint
    # widened by obstacle_margin_m (the drone's own size and its position error are in these two), and
    # the list is read every obstacle_refresh_s. A vehicle that knows none (real flight) has only the
    # floor.
    obstacle_clearance_m: float = 1.0
    obstacle_margin_m: float = 1.0
    obstacle_refresh_s: float = 0.5

    def __post_init__(self) -> None:
        check_limits(self)  # onboard.config_limits: every number's valid range
        if self.on_stall not in STALL_POLICIES:
            raise ValueError(f"on_stall={self.on_stall!r} must be one of {STALL_POLICIES}")
        if self.estop_action not in ("land", "kill"):
            raise ValueError(f"estop_action={self.estop_action!r} must be 'land' or 'kill'")
        if not 0 <= self.altitude_floor_m < self.altitude_ceiling_m:
            raise ValueError(
                f"need 0 <= altitude_floor_m ({self.altitude_floor_m}) < altitude_ceiling_m "
                f"({self.altitude_ceiling_m})"
            )
