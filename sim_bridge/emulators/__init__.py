"""Real-protocol peers for real vehicle adapters, backed by the built-in simulator's World.

- `tello_emulator`: DJI Tello SDK 2.0 over UDP (command/state/H.264 video), for unmodified djitellopy;
  its parts: `tello_commands` (SDK dispatcher), `tello_state` (state datagrams), `tello_airframe`
  (motion and battery on the World), `tello_sdk` (the SDK's vocabulary and shared state).
- `mavlink_emulator`: a PX4 (or ArduPilot) autopilot over MAVLink/UDP, for unmodified pymavlink.
- `flight_reset`: each new flight back at the printed spawn with a fresh pack (both emulators).
- `h264_out`: renders a vehicle's camera and streams it as raw H.264 (Annex-B) in UDP datagrams.
- `cli_emulators`: `dronecats sim --tello / --mavlink`.
"""
