"""The fleet library (no Qt): what the GUI, the headless mode and the episode runner share.

- `state`: what the ground station knows of each drone (telemetry, frames, steps, declarations,
  orders, acks), fed by the link's callbacks, with listeners for views.
- `client.FleetClient`: one GroundLink to N drones; commands with acks (safety fan-out to every
  drone in parallel), judgements, remote actions, session log export.
- `structures`: the three command structures (docs/howto/fleet.md#4-choose-a-structure): PerDrone
  (one pilot per drone), OneContext (one model call for all N frames, actions sent as RemoteActions
  with their frames' poses), Commander (text orders to sub-agents; expiry after 6 steps, re-plan on
  expiry/finished).
  The commanders themselves (rule-based and model) live in `models.commanders`, shared with the
  episodes, which never import the ground station.
- `launch.SimFleet`: the built-in simulator plus N real `dronecats onboard` processes, for the demo,
  tests and benchmarks.
"""
