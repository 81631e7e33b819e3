"""Camera calibration: checkerboard views to a camera profile (`dronecats calibrate`).

- `sources.open_source(SRC)`: frames from a device index, stream URL, GStreamer pipeline, folder,
  video file, `airsim://HOST:PORT/VEHICLE[/CAMERA]`, or any scheme declared in the
  `dronecats.camera_sources` entry points (e.g. a future `tello://`).
- `views.ViewCollector`: feed frames, get a `ViewVerdict` each (accepted, or no board / blurry /
  duplicate / too oblique, with the reason) and `CaptureProgress`; Qt-free so a GUI panel can host it.
- `solve.calibrate_views`: cv2.calibrateCamera with outlier views dropped; `CalibrationResult
  .to_profile()` gives the `common.camera.CameraProfile` that `--camera camera.yaml` loads.
- `undistort`: frames and pixels through a profile's lens model, for pilots that want a pinhole image.
- `sim_sweep`: a simulator's camera calibrated by spawning a board and moving the vehicle around it.
- `synthetic`: views rendered through a known lens, to check all of the above against ground truth.
- `pinhole.PinholeCamera`: intrinsics and distortion, what a `CalibrationResult` estimates and a
  `SyntheticCamera` renders through.
"""
