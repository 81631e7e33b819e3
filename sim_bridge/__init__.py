"""The AirSim bridge and the built-in simulator with its AirSim-compatible RPC server."""
