"""The built-in simulator: a PyBullet world (scene, collisions, CPU rendering) with kinematic multirotors.

`sim_bridge.sim.world.World` is the in-process API; `sim_bridge.rpc` serves it over AirSim's RPC.
"""
