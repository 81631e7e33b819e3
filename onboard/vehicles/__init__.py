"""Real vehicles behind the common Vehicle/Camera interfaces, chosen by URL.

- `tello.TelloVehicle` (``tello://192.168.10.1``): DJI Tello over djitellopy.
- `px4.MavlinkVehicle` (``mavlink://udpin:0.0.0.0:14540``): PX4 offboard or ArduPilot GUIDED over pymavlink;
  its parts: `mavlink_link` (connection, acks, heartbeats, stream requests, parameters),
  `mavlink_telemetry` (receiver, link watch), `mavlink_setpoints` (setpoint writer),
  `mavlink_checks` (the parameters checked before arming).
- `video`: H.264-over-UDP and OpenCV camera sources with frame-age tracking.
- `deadreckon`: position for vehicles that do not measure it (labelled as dead-reckoned).
- `spawn`: the `spawn=` URL parameter (the vehicle's origin in the episode's world frame).
- `faults`: vehicle faults (failsafe, RC takeover, stale video, link loss) reported into the runtime.
"""
