"""The composition root of a flight: the parts that vary in, one wired OnboardRuntime out, flown in
real time or in lock-step.

Every place that flies a drone builds its runtime here: `dronecats onboard`, the episode runner (in
lock-step on an in-process World through episodes.local_flight, and on a server through episodes.hil),
the fleet runner, the demo, the benchmarks and the tests. What varies between them is only what goes
in: the configuration, the vehicle (and its camera), the pilot, the clock (wall time, or a simulator's
in lock-step), the flight recorder or the log directory to open one in, a publisher (the ground-station
link) and the ground truth a simulator can give. So how a runtime is put together is written once.

What a caller closes afterwards: the recorder (`runtime.recorder.close()`, also when it was opened
here from a log directory), and the vehicle, pilot and truth it brought.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, cast

from common.capabilities import VehicleCapabilities, vehicle_capabilities
from common.clock import Clock
from common.interfaces import Camera, Vehicle
from models.pilot import Pilot
from onboard.decision import RunResult
from onboard.lockstep import LatencyModel, LockstepDriver, Stepper, measured_latency
from onboard.recorder import FlightRecorder
from onboard.reporter import Publisher
from onboard.runtime import OnboardRuntime
from onboard.runtime_config import RuntimeConfig
from onboard.vehicles.faults import attach_vehicle_faults

if TYPE_CHECKING:
    from common.truth import GroundTruth


def vehicle_camera(vehicle: Vehicle, capabilities: VehicleCapabilities) -> Camera:
    """The camera a vehicle carries (airsim://, tello://, mavlink:// with a camera: `camera()`); a
    vehicle without one is its own camera (a test double that is both)."""
    if capabilities.camera is not None:
        return capabilities.camera.camera()
    return cast(Camera, vehicle)


def assemble(
    config: RuntimeConfig,
    vehicle: Vehicle,
    pilot: Pilot,
    clock: Clock,
    recorder: FlightRecorder | str | Path,
    *,
    camera: Camera | None = None,
    truth: GroundTruth | None = None,
    publisher: Publisher | None = None,
) -> OnboardRuntime:
    """The runtime for one drone. `recorder`: an open FlightRecorder (one the caller has already
    written the episode record into, or shares between drones), or a log directory to open one in with
    `config.recorder`. `camera`: by default the vehicle's own (vehicle_camera). A vehicle that reports
    faults (tello://, mavlink://: failsafe, RC takeover, stale video, link loss) has them routed into
    the runtime's events and safety governor."""
    if isinstance(recorder, str | Path):
        recorder = FlightRecorder(recorder, config.recorder)
    capabilities = vehicle_capabilities(vehicle)
    runtime = OnboardRuntime(
        config,
        vehicle,
        camera if camera is not None else vehicle_camera(vehicle, capabilities),
        pilot,
        clock,
        recorder,
        truth=truth,
        publisher=publisher,
    )
    attach_vehicle_faults(capabilities.faults, runtime.operator, runtime.reporter)
    return runtime


def fly_realtime(runtime: OnboardRuntime) -> RunResult:
    """Start (connect, pre-arm check, arm, take off, actuation loop) and decide until the run ends."""
    runtime.start()
    return runtime.run()


@dataclass(frozen=True)
class LockstepRun:
    result: RunResult
    # each decision's latency as the latency model drew it ([] when the pilot's measured time was used)
    injected_latencies_s: list[float]


def fly_lockstep(
    runtime: OnboardRuntime,
    stepper: Stepper,
    latency: LatencyModel | None = None,
    on_step: Callable[[OnboardRuntime], None] | None = None,
) -> LockstepRun:
    """Fly in lock-step over `stepper` (a paused World, or a paused server over RPC): each decision
    costs episode time by the `latency` model (None: the pilot's measured time). `on_step(runtime)`
    runs after each step (the demo's progress line)."""
    progress = None if on_step is None else (lambda: on_step(runtime))
    driver = LockstepDriver(runtime, stepper, latency=latency or measured_latency, on_step=progress)
    result = driver.run()
    return LockstepRun(result, driver.injected_latencies_s if latency is not None else [])
