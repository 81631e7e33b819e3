"""The onboard runtime: flies one drone (camera -> pilot -> controller -> vehicle)."""
