"""The built-in simulator: a PyBullet scene (collisions, OpenGL or CPU rendering) with kinematic multirotors.

`sim_bridge.sim.world.World` is the in-process API (over scene, camera, truth and loop);
`sim_bridge.rpc` serves it over AirSim's RPC.
"""
