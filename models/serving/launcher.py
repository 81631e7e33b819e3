"""Start an engine process, wait until it serves, and warm it up with a real frame.

    engine = EngineProcess(argv).start()
    models = engine.wait_ready("http://127.0.0.1:8000", timeout_s=900)
    warm = warm_up("http://127.0.0.1:8000/v1", profile, models[0], frame_bgr, "go to the red car")
    ...
    engine.stop()

Readiness is GET /health answering 200 and then GET /v1/models listing a model (vLLM, trtllm-serve
and `dronecats serve-pilot` all serve both). The warm-up goes through the same openai:// backend and
ModelPilot the onboard runtime uses, so it also compiles the reply schemas' grammars and runs the
vision encoder once at the real frame size: the first flight step is then not the slow one.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import os
import signal
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import IO, Any

import httpx

from common.errors import BackendError
from models.backends.bounded_io import BoundedTransport, CallBudget, bounded

logger = logging.getLogger(__name__)

TAIL_LINES = 40
PROBE_S = 5.0  # one readiness probe, connection to last byte
PROBE_MAX_BYTES = 1024 * 1024  # /health and /v1/models are a few hundred bytes


class EngineProcess:
    """One engine subprocess in its own process group (engines fork workers; stop() ends them all)."""

    def __init__(self, argv: Sequence[str], env: dict[str, str] | None = None, sink: IO[str] | None = None):
        self.argv = list(argv)
        self.env = env
        self.sink = sink  # where the engine's output is copied as it arrives (None: only kept as a tail)
        self.proc: subprocess.Popen[str] | None = None
        self._tail: collections.deque[str] = collections.deque(maxlen=TAIL_LINES)
        self._reader: threading.Thread | None = None

    def start(self) -> EngineProcess:
        logger.info("starting engine: %s", " ".join(self.argv))
        try:
            self.proc = subprocess.Popen(
                self.argv,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                text=True,
                env=self.env,
                start_new_session=True,
            )
        except OSError as exc:
            raise BackendError(f"cannot start engine {self.argv[0]!r}: {exc.strerror or exc}") from None
        self._reader = threading.Thread(target=self._read, name="engine-output", daemon=True)
        self._reader.start()
        return self

    def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for line in self.proc.stdout:
            self._tail.append(line.rstrip("\n"))
            if self.sink is not None:
                self.sink.write(line)
                self.sink.flush()

    def tail(self) -> str:
        return "\n".join(self._tail)

    def returncode(self) -> int | None:
        return None if self.proc is None else self.proc.poll()

    def wait_ready(self, base_url: str, timeout_s: float = 900.0, poll_s: float = 0.5) -> list[str]:
        """Block until the engine answers /health with 200 and lists its models; return their ids.

        `base_url` is the server root (http://host:port). Raises BackendError when the engine exits
        or `timeout_s` passes first (a Jetson loading a 2B model takes minutes; the caller decides).
        """
        deadline = time.monotonic() + timeout_s
        last = "no answer yet"
        # Each probe is bounded as a flight call is (models.backends.bounded_io): an engine that
        # trickles its answer is "not ready", never a probe that outlives the deadline.
        transport = BoundedTransport(httpx.Limits())
        with httpx.Client(
            base_url=base_url.rstrip("/"), timeout=httpx.Timeout(PROBE_S, connect=1.0), transport=transport
        ) as client:
            while True:
                code = self.returncode()
                if code is not None:
                    raise BackendError(
                        f"engine exited with status {code} before it was ready; last output:\n{self.tail()}"
                    )
                try:
                    with bounded(CallBudget(time.monotonic() + PROBE_S, PROBE_S, PROBE_MAX_BYTES)):
                        health = client.get("/health")
                    if health.status_code == 200:
                        with bounded(CallBudget(time.monotonic() + PROBE_S, PROBE_S, PROBE_MAX_BYTES)):
                            listed = client.get("/v1/models")
                        listed.raise_for_status()
                        ids = [str(m["id"]) for m in listed.json()["data"]]
                        if ids:
                            return ids
                        last = "/v1/models lists no model"
                    else:
                        last = f"/health answered {health.status_code}"
                except (httpx.HTTPError, KeyError, TypeError, ValueError) as exc:
                    last = f"{type(exc).__name__}: {exc}"
                if time.monotonic() >= deadline:
                    raise BackendError(f"engine not ready after {timeout_s:g} s at {base_url} ({last})")
                time.sleep(poll_s)

    def wait(self) -> int:
        assert self.proc is not None
        return self.proc.wait()

    def stop(self, timeout_s: float = 30.0) -> int | None:
        """SIGTERM to the engine's process group, then SIGKILL after `timeout_s`."""
        proc = self.proc
        if proc is None:
            return None
        if proc.poll() is None:
            self._signal(signal.SIGTERM)
            try:
                proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                logger.warning("engine did not stop within %.0f s of SIGTERM; killing it", timeout_s)
                self._signal(signal.SIGKILL)
                proc.wait()
        self._end_group(timeout_s=5.0)
        if self._reader is not None:
            self._reader.join(timeout=5)
        if proc.stdout is not None:
            proc.stdout.close()
        return proc.returncode

    def _end_group(self, timeout_s: float) -> None:
        """Workers the engine forked got the SIGTERM too; give them a moment, then SIGKILL what is left
        (an orphaned GPU worker would hold the memory the next engine needs)."""
        assert self.proc is not None
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                os.killpg(self.proc.pid, 0)
            except (ProcessLookupError, PermissionError):
                return
            time.sleep(0.05)
        logger.warning("engine workers still running %.0f s after the engine; killing them", timeout_s)
        self._signal(signal.SIGKILL)

    def _signal(self, sig: int) -> None:
        assert self.proc is not None
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, sig)


@dataclass
class WarmupCall:
    kind: str  # "action" or "plan"
    latency_s: float
    action: str | None  # the parsed action's name, None when unusable
    raw: str
    error: str | None = None


@dataclass
class WarmupResult:
    calls: list[WarmupCall] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return bool(self.calls) and all(c.error is None for c in self.calls)

    def summary(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "calls": [
                {
                    "kind": c.kind,
                    "latency_ms": round(c.latency_s * 1000, 1),
                    "action": c.action,
                    "error": c.error,
                }
                for c in self.calls
            ],
        }


def warm_up(
    api_base_url: str,
    model_profile: str,
    served_model: str,
    image_bgr: Any,
    instruction: str,
    action_calls: int = 2,
    plan_call: bool = True,
    timeout_s: float = 300.0,
) -> WarmupResult:
    """Send `action_calls` action requests (the first is the cold one) and one plan-schema request
    with `image_bgr` through the openai:// backend, exactly as a flight step would."""
    from common.actions import action_name
    from models.backends.openai_http import OpenAIBackend
    from models.pilot import ModelPilot, Observation
    from models.profile import load_profile

    profile = load_profile(model_profile)
    backend = OpenAIBackend(api_base_url, served_model, timeout_s=timeout_s, retries=0)
    pilot = ModelPilot(backend, profile)
    result = WarmupResult()
    kinds = ["action"] * action_calls + (["plan"] if plan_call and pilot.prompt.switches.uses_plan else [])
    try:
        for kind in kinds:
            observation = Observation(image_bgr, instruction, plan=kind == "plan")
            started = time.perf_counter()
            decision = pilot.decide(observation)
            latency_s = time.perf_counter() - started
            name = action_name(decision.action) if decision.action is not None else None
            result.calls.append(WarmupCall(kind, latency_s, name, decision.raw, decision.error))
            logger.info("warm-up %s: %.0f ms -> %s %s", kind, latency_s * 1000, name, decision.error or "")
    finally:
        pilot.close()
    return result
