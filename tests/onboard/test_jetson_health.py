"""Jetson health: tegrastats lines of three JetPack generations, jtop's stats, and the monitor
reading a stand-in `tegrastats` executable (no Jetson here: the stand-in prints recorded-format
lines on its stdout, which is the monitor's only interface to the real tool); absent gracefully."""

from __future__ import annotations

from pathlib import Path

import pytest

from common.logformat import DeclarationLine
from onboard.jetson import JetsonMonitor, JetsonSources, health_from_jtop, parse_tegrastats, read_power_mode
from onboard.reporter import StepExtras, TelemetrySnapshot
from tests.support.jetson import ORIN_JP6, STAND_IN, executable, wait_for

XAVIER_JP5 = (
    "RAM 2300/7765MB (lfb 1x4MB) SWAP 0/3882MB (cached 0MB) CPU [5%@1190,3%@1190,10%@1190,2%@1190] "
    "EMC_FREQ 0% GR3D_FREQ 0% AO@37.5C GPU@36C Tboard@35C Tdiode@37.25C AUX@36.5C CPU@37.5C "
    "thermal@36.95C PMIC@100C VDD_IN 4000mW/4100mW"
)
NANO_JP4 = (
    "RAM 1500/3964MB (lfb 300x4MB) SWAP 0/1982MB (cached 0MB) IRAM 0/252kB(lfb 252kB) "
    "CPU [20%@1479,10%@1479,off,off] EMC_FREQ 3%@1600 GR3D_FREQ 99%@921 APE 25 PLL@28.5C CPU@31C "
    "PMIC@100C GPU@29.5C AO@36.5C thermal@30.25C POM_5V_IN 1895/1895 POM_5V_GPU 0/0 POM_5V_CPU 321/321"
)


def test_orin_line() -> None:
    h = parse_tegrastats(ORIN_JP6)
    assert h is not None
    assert (h.ram_used_mb, h.ram_total_mb, h.swap_used_mb) == (5234, 15656, 12)
    assert h.cpu_load_pct == pytest.approx((12 + 6 + 2) / 3, abs=0.05)  # offline cores are not zeros
    assert h.gpu_load_pct == 61
    assert (h.cpu_temp_c, h.gpu_temp_c, h.max_temp_c) == (48.5, 46.4, 48.9)  # tj is the hottest
    assert h.power_mw == 5493


def test_xavier_and_nano_lines() -> None:
    x = parse_tegrastats(XAVIER_JP5)
    assert x is not None and x.cpu_temp_c == 37.5 and x.gpu_temp_c == 36.0
    assert "pmic" not in x.temps_c and x.max_temp_c == 37.5  # PMIC@100C is a placeholder
    assert x.power_mw == 4000 and x.gpu_load_pct == 0
    n = parse_tegrastats(NANO_JP4)
    assert n is not None and n.gpu_load_pct == 99 and n.power_mw == 1895 and n.cpu_temp_c == 31.0
    assert parse_tegrastats("tegrastats: permission denied") is None


def test_jtop_stats() -> None:
    stats = {
        "time": "2026-11-29",
        "uptime": 100.0,
        "CPU1": 10,
        "CPU2": 30,
        "RAM": 0.4,
        "GPU": 55.0,
        "Temp CPU": 51.2,
        "Temp GPU": 49.0,
        "Temp tj": 52.0,
        "Temp CV0": -256,
        "Power TOT": 9800,
        "nvp model": "MAXN",
        "jetson_clocks": "ON",
    }
    h = health_from_jtop(stats)
    assert h is not None
    assert h.cpu_load_pct == 20 and h.gpu_load_pct == 55
    assert (h.cpu_temp_c, h.gpu_temp_c, h.max_temp_c) == (51.2, 49.0, 52.0)
    assert "cv0" not in h.temps_c
    assert h.power_mw == 9800 and h.power_mode == "MAXN"


def test_monitor_reads_tegrastats_power_mode_and_throttling(tmp_path: Path) -> None:
    hot = ORIN_JP6.replace("tj@48.9C", "tj@97.5C")
    tegrastats = executable(tmp_path / "tegrastats", STAND_IN.format(lines=[ORIN_JP6, ORIN_JP6, hot]))
    nvpmodel = executable(tmp_path / "nvpmodel", 'print("NV Power Mode: MAXN")\nprint(0)\n')
    oc = tmp_path / "oc1_event_cnt"
    oc.write_text("3\n")
    monitor = JetsonMonitor(
        JetsonSources(
            interval_ms=50,
            tegrastats=tegrastats,
            nvpmodel=nvpmodel,
            oc_pattern=str(tmp_path / "oc*_event_cnt"),
        )
    ).start()
    try:
        snap = wait_for(monitor, lambda s: True)
        assert monitor.source == "tegrastats"
        assert snap.power_mode == "MAXN" and snap.ram_total_mb == 15656 and snap.source == "tegrastats"
        hot_snap = wait_for(monitor, lambda s: s.throttled)
        assert hot_snap.throttle_reasons == ("thermal: 97.5 C >= 95 C",)
        oc.write_text("5\n")
        oc_snap = wait_for(monitor, lambda s: len(s.throttle_reasons) == 2)
        assert "over-current: 2 events since start" in oc_snap.throttle_reasons
    finally:
        monitor.stop()
    assert monitor._proc is not None and monitor._proc.poll() is not None


def test_absent_gracefully(tmp_path: Path) -> None:
    # this machine is no Jetson: no tegrastats, no nvpmodel, no jtop
    assert read_power_mode() is None
    monitor = JetsonMonitor(JetsonSources(oc_pattern=str(tmp_path / "none*"))).start()
    try:
        assert monitor.source is None and monitor.snapshot() is None
    finally:
        monitor.stop()
    # a tegrastats that cannot start is logged, not raised
    broken = JetsonMonitor(JetsonSources(tegrastats=str(tmp_path / "missing-tegrastats"))).start()
    broken.stop()
    assert broken.snapshot() is None


def test_stale_samples_are_not_reported(tmp_path: Path) -> None:
    tegrastats = executable(
        tmp_path / "tegrastats", f"print({ORIN_JP6!r}, flush=True)\nimport time\ntime.sleep(60)\n"
    )
    monitor = JetsonMonitor(JetsonSources(tegrastats=tegrastats, nvpmodel=str(tmp_path / "none"))).start()
    try:
        wait_for(monitor, lambda s: True)
        latest = monitor.latest()
        assert latest is not None
        latest.sampled_s -= 10.0  # as if tegrastats had hung 10 s ago
        assert monitor.snapshot() is None
    finally:
        monitor.stop()


class TelemetryRecorder:
    """The runtime's Publisher, keeping what it publishes."""

    def __init__(self) -> None:
        self.telemetry: list[TelemetrySnapshot] = []

    def publish_step(self, step: StepExtras) -> None:
        pass

    def publish_frame(self, frame: object) -> None:
        pass

    def publish_telemetry(self, telemetry: TelemetrySnapshot) -> None:
        self.telemetry.append(telemetry)

    def publish_declaration(self, declaration: DeclarationLine) -> None:
        pass


def test_runtime_telemetry_carries_jetson_health(tmp_path: Path) -> None:
    from onboard.lockstep import LockstepDriver
    from sim_bridge.sim.world import World
    from tests.support.runtime import make_runtime

    tegrastats = executable(tmp_path / "tegrastats", STAND_IN.format(lines=[ORIN_JP6]))
    world = World("residential", vehicles=1, seed=0)
    world.pause(True)
    try:
        rt = make_runtime(world, tmp_path / "run", max_steps=2)
        publisher = TelemetryRecorder()
        rt.reporter.publisher = publisher
        # lock-step runs do not start the monitor (a flight does, in start()); start the stand-in here
        rt.reporter.jetson = JetsonMonitor(
            JetsonSources(interval_ms=20, tegrastats=tegrastats, nvpmodel=str(tmp_path / "none"))
        )
        rt.reporter.jetson.start()
        wait_for(rt.reporter.jetson, lambda s: True)
        LockstepDriver(rt, world).run()
    finally:
        rt.reporter.jetson.stop()
        world.close()
    assert publisher.telemetry, "no telemetry published"
    health = [t.jetson for t in publisher.telemetry]
    assert health[-1] is not None and health[-1].gpu_temp_c == 46.4 and health[-1].ram_used_mb == 5234
