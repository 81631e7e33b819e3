"""Multi-drone episodes (docs/protocol.md#several-drones) in lock-step: N OnboardRuntimes on one World
(each wired by episodes.local_flight), driven together by onboard.lockstep's MultiLockstepDriver.

- `commander`: a commander (the rule-based one, or a commander model URL) writes one order per drone;
  each drone's own pilot (the sub-agent, e.g. the baseline) flies its order for `expires_after_steps`
  executed steps, then holds; the commander re-plans at the start, when an order expires and when a
  sub-agent executes `finished` (the rules of ground_station.fleet.structures.CommanderStructure,
  applied here between lock-step rounds instead of on link events).
- `multi`: one model call sees every drone's frame and answers one action per drone
  (models.pilot.decide_multi); the drones run in remote mode and execute those actions with the pose
  and age of their frames (DecisionStep.apply_remote), as with the ground station's one-context
  structure. Calls where every drone got the same `go` are counted (coordinate copying).

All drones log into one FlightRecorder (one steps/trace/declarations file set, a `drone` field per
line); the verifier pools declarations across drones.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from common.actions import Go
from common.capabilities import Closeable
from common.errors import ConfigError
from common.pose import Frame
from episodes.records import EpisodeRecord

if TYPE_CHECKING:
    from episodes.run_options import RunOptions
    from models.commanders import Commander, CommanderInput
    from models.pilot import Pilot
    from onboard.lockstep import JointDecision, MultiLockstepDriver
    from onboard.recorder import FlightRecorder
    from onboard.runtime import OnboardRuntime
    from onboard.runtime_config import RuntimeConfig

# An episode's injected latency (episodes.run_options.LatencySpec.model): seconds for a call, whatever
# it was (a pilot's pending decision, or None for a commander's or a joint call).
InjectedLatency = Callable[[Any], float]

log = logging.getLogger(__name__)

STRUCTURES = ("multi", "commander")
ORDER_EXPIRES_AFTER_STEPS = 6  # docs/protocol.md#several-drones


@dataclass
class FleetOutcome:
    """What a multi-drone lock-step run did, for result.json and episode.json."""

    reason: str
    steps: int
    sim_time_s: float
    injected_latencies_s: list[float]
    per_drone: dict[str, dict[str, Any]]
    structure: dict[str, Any] = field(default_factory=dict)


class DroneRecorder:
    """One drone's view of the shared FlightRecorder: log lines go to the shared files (each has its
    `drone` field); the runtime's episode.json metadata goes under run.drones.<name>, deep-copied,
    because the recorder merges dicts by reference and N runtimes would otherwise overwrite each
    other's `run` fields (and alias each other's counters)."""

    def __init__(self, shared: FlightRecorder, drone: str) -> None:
        self.shared = shared
        self.drone = drone
        self.step = shared.step
        self.declaration = shared.declaration
        self.trace_due = shared.trace_due
        self.mark_trace = shared.mark_trace
        self.trace = shared.trace
        self.event = shared.event
        self.save_frame = shared.save_frame

    def write_metadata(self, **fields: Any) -> None:
        import copy

        run = copy.deepcopy(fields.pop("run", {}))
        self.shared.write_metadata(run={"drones": {self.drone: run}}, **copy.deepcopy(fields))


class LockstepCommander:
    """The commander between lock-step rounds: plans at the start, re-plans on expiry and `finished`."""

    def __init__(
        self,
        commander: Commander,
        runtimes: Sequence[OnboardRuntime],
        instruction: str,
        expires_after_steps: int = ORDER_EXPIRES_AFTER_STEPS,
        latency: InjectedLatency | None = None,
    ) -> None:
        self.commander = commander
        # an injected-latency model, or None: the call's measured time (which makes the episode
        # depend on the machine's load: an injected latency keeps lock-step deterministic)
        self.latency = latency
        self.runtimes = list(runtimes)
        self.instruction = instruction
        self.expires_after_steps = expires_after_steps
        self.active: dict[str, str | None] = {rt.config.drone: None for rt in self.runtimes}
        self._declarations = {rt.config.drone: 0 for rt in self.runtimes}
        self.replans: list[str] = []
        self.errors: list[str] = []
        self.calls = 0
        self.latencies_s: list[float] = []

    def __call__(self, driver: MultiLockstepDriver) -> None:
        whys = [] if self.replans else ["start"]
        for rt in self.runtimes:
            drone = rt.config.drone
            order = self.active[drone]
            flight = rt.state.snapshot()
            declared = flight.declarations > self._declarations[drone]
            self._declarations[drone] = flight.declarations
            if order is None or flight.order_id != order:
                continue
            if declared:  # a `finished` executed under this order (its last step included)
                whys.append(f"finished:{drone}")
                self.active[drone] = None
            elif flight.order_steps_left is None:  # the order ran out of steps: the drone holds
                whys.append(f"expired:{drone}")
                self.active[drone] = None
        if whys:
            self.replan(",".join(whys), driver)

    def _situation(self) -> CommanderInput:
        from models.commanders import CommanderInput, DroneView

        views = []
        for rt in self.runtimes:
            telemetry = rt.newest_telemetry()
            image = rt.camera.read().image  # the newest frame, as the ground station would have it
            views.append(DroneView(rt.config.drone, telemetry.pose, image, rt.state.last_action()))
        return CommanderInput(self.instruction, views)

    def replan(self, why: str, driver: MultiLockstepDriver) -> None:
        situation = self._situation()
        started = time.perf_counter()
        orders = self.commander.plan(situation)
        measured_s = time.perf_counter() - started
        latency_s = measured_s if self.latency is None else max(0.0, self.latency(None))
        self.calls += 1
        self.latencies_s.append(latency_s)
        self.replans.append(why)
        # the commander's thinking costs episode time too (docs/safety.md#lock-step-time)
        driver.advance(latency_s)
        # the fleet's shared files (a DroneRecorder's event is the shared recorder's)
        recorder, t = self.runtimes[0].recorder, self.runtimes[0].t()
        recorder.event(
            "commander",
            t,
            "commander",
            why=why,
            orders=list(orders.orders or []),
            error=orders.error,
            detail=orders.detail,
            latency_s=latency_s,
            measured_s=measured_s,
        )
        if orders.orders is None:
            self.errors.append(orders.error or "commander gave no orders")
            return  # orders stay as they are; drones whose order ended keep holding
        for index, (rt, text) in enumerate(zip(self.runtimes, orders.orders, strict=True)):
            order_id = f"o{self.calls}-{index + 1}"
            rt.operator.set_order(order_id, text, self.expires_after_steps)
            self.active[rt.config.drone] = order_id
            self._declarations[rt.config.drone] = rt.state.declarations

    def summary(self) -> dict[str, Any]:
        return {
            "commander": self.commander.name,
            "commander_calls": self.calls,
            "replans": self.replans,
            "commander_errors": self.errors,
            "order_expires_after_steps": self.expires_after_steps,
        }


class JointModel:
    """One-context pilot: every drone's frame in one call (models.pilot.decide_multi)."""

    def __init__(
        self, url: str, runtimes: Sequence[OnboardRuntime], latency: InjectedLatency | None = None
    ) -> None:
        from models.backends import open_backend
        from models.pilot import profile_for_url
        from models.pilot_prompt import MultiDronePrompt

        self.url = url
        self.runtimes = list(runtimes)
        self.backend = open_backend(url)
        self.prompt = MultiDronePrompt(profile_for_url(url), len(self.runtimes))
        self.latency = latency  # an injected-latency model, or None: the call's measured time
        self.calls = 0
        self.errors: list[str] = []
        self.all_go_calls = 0
        # calls where every drone got the same go (coordinate copying, docs/protocol.md#several-drones)
        self.copying_calls = 0
        self._last_images: list[np.ndarray | None] = [None] * len(self.runtimes)

    def __call__(self, frames: Sequence[Frame | None]) -> JointDecision:
        from models.pilot import decide_multi
        from onboard.lockstep import JointDecision

        images = []
        for index, frame in enumerate(frames):
            if frame is not None:
                self._last_images[index] = frame.image
            image = self._last_images[index]
            if image is None:  # a drone that never streamed (landed at once): a black frame
                shape = next(f.image.shape for f in frames if f is not None)
                image = np.zeros(shape, np.uint8)
            images.append(image)
        histories = [list(rt.state.recent()[0]) for rt in self.runtimes]
        started = time.perf_counter()
        decision = decide_multi(
            self.backend, self.prompt, self.runtimes[0].state.instruction, images, histories
        )
        measured_s = time.perf_counter() - started
        self.calls += 1
        if decision.error is not None:
            self.errors.append(decision.error)
        acting = [a for f, a in zip(frames, decision.actions, strict=True) if f is not None]
        gos = [a for a in acting if isinstance(a, Go)]
        if len(acting) >= 2 and len(gos) == len(acting):
            self.all_go_calls += 1
            self.copying_calls += len({(a.point, a.depth_m) for a in gos}) == 1
        if self.latency is not None:
            latency_s = self.latency(None)
        elif decision.stats is not None and decision.stats.latency_s is not None:
            latency_s = decision.stats.latency_s
        else:
            latency_s = measured_s
        return JointDecision(
            decision.actions, latency_s, f"m{self.calls}-{uuid.uuid4().hex[:6]}", decision.raw, decision.error
        )

    def summary(self) -> dict[str, Any]:
        return {
            "model": self.url,
            "multi_calls": self.calls,
            "multi_call_errors": self.errors[:20],
            "all_go_calls": self.all_go_calls,
            "coordinate_copying_calls": self.copying_calls,
            "coordinate_copying_rate": (
                round(self.copying_calls / self.all_go_calls, 4) if self.all_go_calls else None
            ),
        }

    def close(self) -> None:
        self.backend.close()


def _commander(spec: str | None, n_drones: int, camera: str | None) -> Commander:
    from models.commanders import ModelCommander, RuleCommander

    if spec in (None, "", "rule"):
        from common.camera import camera_profile

        return RuleCommander(camera_profile(camera) if camera else None)
    if "://" in spec:
        return ModelCommander(spec, n_drones)
    raise ConfigError(f"--commander {spec!r}: use rule or a commander model URL")


def fly_fleet_local(
    record: EpisodeRecord,
    config: RuntimeConfig,
    options: RunOptions,
    recorder: FlightRecorder,
    structure: str,
    seed: int,
) -> FleetOutcome:
    """Fly a multi-drone record in lock-step; `config` is the RuntimeConfig every drone starts from."""
    import msgspec

    from episodes.local_flight import local_runtime
    from episodes.preflight import check_or_refuse
    from episodes.scenario import build_world
    from models.serve import make_pilot
    from onboard.lockstep import MultiLockstepDriver, measured_latency
    from sim_bridge.local import LocalCamera, LocalTruth

    if structure not in STRUCTURES:
        raise ConfigError(f"structure {structure!r} is not one of {STRUCTURES}")
    if len(record.drones) < 2:
        raise ConfigError(f"episode {record.id}: structure {structure} needs at least 2 drones")
    if structure == "multi" and "://" not in options.pilot:
        raise ConfigError(
            f"--structure multi needs a model URL as --pilot (one call for all drones), not {options.pilot!r}"
        )
    world = build_world(record)
    pilots: list[Pilot] = []
    joint: JointModel | None = None
    commander: LockstepCommander | None = None
    try:
        check_or_refuse(world, record, recorder)
        names = [d.name for d in record.drones]
        cameras = {name: LocalCamera(world, name) for name in names}
        truth = LocalTruth(world, record.targets[0].id, cameras)
        runtimes = []
        for name in names:
            if structure == "multi":
                # Remote mode: the joint call decides; this drone's own pilot is never asked.
                drone_config = msgspec.structs.replace(config, drone=name, remote=True)
            else:
                # Sub-agents wait for the commander's first order (an empty instruction holds).
                drone_config = msgspec.structs.replace(config, drone=name, instruction="")
            pilot = make_pilot(options.pilot, delta_m=record.delta_m, camera=record.camera)
            pilots.append(pilot)
            runtimes.append(
                local_runtime(
                    world,
                    name,
                    drone_config,
                    pilot,
                    DroneRecorder(recorder, name),  # type: ignore[arg-type]
                    camera=cameras[name],
                    truth=truth,
                )
            )
        latency = options.latency.model(seed)
        on_round = None
        if structure == "multi":
            joint = JointModel(options.pilot, runtimes, latency)
        else:
            commander = LockstepCommander(
                _commander(options.commander, len(names), record.camera),
                runtimes,
                record.instruction,
                latency=latency,
            )
            on_round = commander
        driver = MultiLockstepDriver(
            runtimes, world, latency=latency or measured_latency, joint=joint, on_round=on_round
        )
        reason = driver.run()
        injected = [] if options.latency.kind == "measured" else driver.injected_latencies_s
        summary: dict[str, Any] = {"name": structure, "rounds": driver.rounds, "drones": names}
        chosen = joint if joint is not None else commander
        assert chosen is not None  # one of the two structures
        summary.update(chosen.summary())
        results = [rt.result(rt.stop_reason() or reason) for rt in runtimes]
        per_drone = {
            rt.config.drone: {
                "end_reason": result.reason,
                "mode": result.mode,
                "steps": result.steps,
                "declarations": result.declarations,
                "qualifying_t": result.qualifying_declaration_t,
                "counters": dict(result.counters.__dict__),
            }
            for rt, result in zip(runtimes, results, strict=True)
        }
        recorder.write_metadata(run={"structure_summary": summary, "per_drone": per_drone})
        return FleetOutcome(
            reason,
            sum(result.steps for result in results),
            runtimes[0].t(),
            injected,
            per_drone,
            summary,
        )
    finally:
        for pilot in pilots:
            if isinstance(pilot, Closeable):
                pilot.close()
        if joint is not None:
            joint.close()
        if commander is not None and isinstance(commander.commander, Closeable):
            commander.commander.close()
        world.close()
