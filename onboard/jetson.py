"""Jetson health for the onboard telemetry: temperatures, throttling, power mode, memory, load.

On a Jetson, `tegrastats` prints one line per interval; a reader thread keeps the latest line parsed,
so the actuation loop's telemetry callback only copies a snapshot (it must never block on a
subprocess). Without tegrastats, jetson-stats' `jtop` service is used when its Python client is
installed. Elsewhere (a laptop, CI, the simulator) there is nothing to read: `snapshot()` returns
None and nothing else happens.

    monitor = JetsonMonitor()
    monitor.start()            # no-op off a Jetson
    monitor.snapshot()         # common.messages.JetsonHealth for the telemetry, or None
    monitor.stop()

A reading is checked against the message's ranges when it is read (`JetsonHealth`, the one type the
telemetry carries): one that does not fit is dropped here, logged once, and the telemetry goes out
without Jetson health.
"""

from __future__ import annotations

import contextlib
import glob
import logging
import re
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass
from typing import Any

import msgspec

from common.messages import Id, JetsonHealth

logger = logging.getLogger(__name__)

TEGRASTATS_PATHS = ("/usr/bin/tegrastats", "/usr/sbin/tegrastats")
# Orin starts software thermal throttling near a junction temperature of 99 °C; report it a little
# before, so an operator sees it coming (a throttled GPU slows every model step).
THROTTLE_TEMP_C = 95.0
STALE_AFTER_S = 5.0

_RAM = re.compile(r"\bRAM (\d+)/(\d+)MB")
_SWAP = re.compile(r"\bSWAP (\d+)/(\d+)MB")
_CPU = re.compile(r"\bCPU \[([^\]]*)\]")
_GPU = re.compile(r"\bGR3D_FREQ (\d+)%")
_TEMP = re.compile(r"\b([A-Za-z][\w]*)@(-?\d+(?:\.\d+)?)C\b")
_POWER = re.compile(r"\b(VDD_IN|POM_5V_IN) (\d+)(?:mW)?/(\d+)(?:mW)?")


@dataclass
class JetsonSample:
    """The latest reading and when it was read (time.monotonic())."""

    health: JetsonHealth
    sampled_s: float


_warned: set[str] = set()


def _health(fields: dict[str, Any]) -> JetsonHealth | None:
    """A reading as the message type, None (logged once per source) when a number is out of range."""
    temps: dict[str, float] = fields.get("temps_c", {})
    if temps:
        fields.setdefault("max_temp_c", max(temps.values()))
    fields.setdefault("cpu_temp_c", temps.get("cpu"))
    fields.setdefault("gpu_temp_c", temps.get("gpu"))
    try:
        return msgspec.convert(fields, JetsonHealth)
    except (msgspec.ValidationError, ValueError) as exc:
        if fields["source"] not in _warned:
            _warned.add(fields["source"])
            logger.warning("Jetson health not sent: %s", exc)
        return None


def parse_tegrastats(line: str, source: str = "tegrastats") -> JetsonHealth | None:
    """One tegrastats line (JetPack 4-6 formats) -> JetsonHealth; None when it is not one."""
    ram = _RAM.search(line)
    if ram is None:
        return None
    fields: dict[str, Any] = {"source": source, "ram_used_mb": float(ram.group(1))}
    fields["ram_total_mb"] = float(ram.group(2))
    swap = _SWAP.search(line)
    if swap:
        fields["swap_used_mb"] = float(swap.group(1))
    cpu = _CPU.search(line)
    if cpu:
        loads = [float(c.split("%")[0]) for c in cpu.group(1).split(",") if "%" in c]
        fields["cpu_load_pct"] = round(sum(loads) / len(loads), 1) if loads else None
    gpu = _GPU.search(line)
    if gpu:
        fields["gpu_load_pct"] = float(gpu.group(1))
    temps: dict[str, float] = {}
    for name, value in _TEMP.findall(line):
        key = name.lower()
        if key == "pmic":  # a fixed placeholder reading (100 C) on many boards, not a sensor
            continue
        temps[key] = float(value)
    fields["temps_c"] = temps
    power = _POWER.search(line)
    if power:
        fields["power_mw"] = float(power.group(2))
    return _health(fields)


def health_from_jtop(stats: dict[str, Any]) -> JetsonHealth | None:
    """jtop's `stats` dict -> JetsonHealth (keys as jetson-stats 4.x names them: "Temp CPU",
    "RAM" as a fraction, "nvp model", "Power TOT" in mW, "GPU" in %; missing keys stay None)."""
    fields: dict[str, Any] = {"source": "jtop"}
    temps: dict[str, float] = {}
    cpu_loads: list[float] = []
    for key, value in stats.items():
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            if key.lower() == "nvp model" and isinstance(value, str):
                fields["power_mode"] = value
            continue
        lower = key.lower()
        if lower.startswith("temp "):
            if value > -200:  # jtop reports -256 for an offline sensor
                temps[lower[5:]] = float(value)
        elif re.fullmatch(r"cpu\d+", lower):
            cpu_loads.append(float(value))
        elif lower == "gpu":
            fields["gpu_load_pct"] = float(value)
        elif lower == "power tot":
            fields["power_mw"] = float(value)
    if cpu_loads:
        fields["cpu_load_pct"] = round(sum(cpu_loads) / len(cpu_loads), 1)
    fields["temps_c"] = temps
    return _health(fields)


def read_power_mode(nvpmodel: str | None = None) -> str | None:
    """The nvpmodel power mode name (`nvpmodel -q`: "NV Power Mode: MAXN"), None when unavailable."""
    exe = nvpmodel or shutil.which("nvpmodel")
    if not exe:
        return None
    try:
        out = subprocess.run([exe, "-q"], capture_output=True, text=True, timeout=5).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(r"NV Power Mode:\s*(\S+)", out)
    return match.group(1) if match else None


def _checked_power_mode(mode: str | None) -> str | None:
    """nvpmodel's mode name if it fits the message's id field, else None (logged)."""
    try:
        return None if mode is None else msgspec.convert(mode, Id)
    except msgspec.ValidationError:
        logger.warning("nvpmodel's power mode %r is not reported: too long", mode)
        return None


def oc_event_count(pattern: str = "/sys/class/hwmon/hwmon*/oc*_event_cnt") -> int | None:
    """Over-current throttle events since boot (Orin's INA3221 hwmon counters), None when absent."""
    total = None
    for path in glob.glob(pattern):
        with contextlib.suppress(OSError, ValueError), open(path) as fh:
            total = (total or 0) + int(fh.read().strip() or 0)
    return total


@dataclass(frozen=True)
class JetsonSources:
    """Where a JetsonMonitor reads from, and how often (None: found on the PATH / the usual places)."""

    interval_ms: int = 1000
    tegrastats: str | None = None
    nvpmodel: str | None = None
    throttle_temp_c: float = THROTTLE_TEMP_C
    oc_pattern: str = "/sys/class/hwmon/hwmon*/oc*_event_cnt"


class JetsonMonitor:
    """Latest Jetson health from a tegrastats (or jtop) reader thread; inert where neither exists."""

    def __init__(self, sources: JetsonSources | None = None) -> None:
        self.sources = sources if sources is not None else JetsonSources()
        self.source: str | None = None
        self._latest: JetsonSample | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._proc: subprocess.Popen[str] | None = None
        self._thread: threading.Thread | None = None
        self._power_mode: str | None = None
        self._oc_at_start: int | None = None

    def _find_tegrastats(self) -> str | None:
        if self.sources.tegrastats:
            return self.sources.tegrastats
        return shutil.which("tegrastats") or next((p for p in TEGRASTATS_PATHS if shutil.which(p)), None)

    def start(self) -> JetsonMonitor:
        if self._thread is not None:
            return self
        self._power_mode = _checked_power_mode(read_power_mode(self.sources.nvpmodel))
        self._oc_at_start = oc_event_count(self.sources.oc_pattern)
        exe = self._find_tegrastats()
        if exe:
            try:
                self._proc = subprocess.Popen(
                    [exe, "--interval", str(self.sources.interval_ms)],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                    stdin=subprocess.DEVNULL,
                    text=True,
                )
            except OSError as exc:
                logger.warning("tegrastats at %s could not start: %s", exe, exc)
            else:
                self.source = "tegrastats"
                self._thread = threading.Thread(
                    target=self._read_tegrastats, name="jetson-health", daemon=True
                )
        if self._thread is None and _jtop_available():
            self.source = "jtop"
            self._thread = threading.Thread(target=self._read_jtop, name="jetson-health", daemon=True)
        if self._thread is None:
            logger.info("no tegrastats or jtop here: Jetson health is not reported")
            return self
        self._thread.start()
        return self

    def _publish(self, health: JetsonHealth | None) -> None:
        """The newest reading (None: it did not fit the message, so none is reported until the next)."""
        sample = None
        if health is not None:
            reasons = []
            if health.max_temp_c is not None and health.max_temp_c >= self.sources.throttle_temp_c:
                reasons.append(f"thermal: {health.max_temp_c:.1f} C >= {self.sources.throttle_temp_c:.0f} C")
            oc = oc_event_count(self.sources.oc_pattern)
            if oc is not None and self._oc_at_start is not None and oc > self._oc_at_start:
                reasons.append(f"over-current: {oc - self._oc_at_start} events since start")
            health = msgspec.structs.replace(
                health,
                power_mode=health.power_mode if health.power_mode is not None else self._power_mode,
                throttle_reasons=tuple(reasons),
                throttled=bool(reasons),
            )
            sample = JetsonSample(health, time.monotonic())
        with self._lock:
            self._latest = sample

    def _read_tegrastats(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        for line in self._proc.stdout:
            if self._stop.is_set():
                break
            if _RAM.search(line):  # a tegrastats line (others, e.g. warnings, are skipped)
                self._publish(parse_tegrastats(line))

    def _read_jtop(self) -> None:
        try:
            from jtop import jtop

            with jtop(interval=self.sources.interval_ms / 1000.0) as jetson:
                while not self._stop.is_set() and jetson.ok():
                    self._publish(health_from_jtop(dict(jetson.stats)))
        except Exception as exc:  # jtop raises its own types when its service is not running
            logger.warning("jtop stopped: %s", exc)

    def latest(self) -> JetsonSample | None:
        with self._lock:
            sample = self._latest
        if sample is None or time.monotonic() - sample.sampled_s > STALE_AFTER_S:
            return None
        return sample

    def snapshot(self) -> JetsonHealth | None:
        """The latest health for the telemetry, None when absent or stale."""
        sample = self.latest()
        return None if sample is None else sample.health

    def stop(self) -> None:
        self._stop.set()
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self._proc is not None and self._proc.stdout is not None:
            self._proc.stdout.close()


def _jtop_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("jtop") is not None
