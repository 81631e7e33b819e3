"""Camera calibration: checkerboard views to a camera profile."""
