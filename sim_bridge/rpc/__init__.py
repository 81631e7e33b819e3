"""AirSim-compatible msgpack-rpc server over the built-in simulator (AirSim 1.8.1's msgpack-rpc protocol)."""
