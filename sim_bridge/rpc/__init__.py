"""AirSim-compatible msgpack-rpc server over the built-in simulator (protocols.md §1)."""
