"""`dronecats serve-model` end to end with a real OpenAI-compatible server in the engine's place
(`dronecats serve-pilot`, through --command): start, readiness, warm-up over openai:// with the
committed simulator frame; and the failure paths (engine dies, never ready, unusable replies)."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import cv2

from models.cli_serve_model import DEFAULT_WARMUP_IMAGE
from models.serving.launcher import EngineProcess
from tests.support.ports import free_port
from tests.support.processes import dronecats_cmd, kill_if_running, run_dronecats, subprocess_env

FAKE_ENGINE = "{python} -m dronecats serve-pilot --port {port} --model-name {served_model}"


def serve_model(*args: str, timeout_s: float = 120.0) -> subprocess.CompletedProcess[str]:
    return run_dronecats("serve-model", *args, timeout_s=timeout_s)


def warmup_summary(stdout: str) -> dict:
    line = next(x for x in stdout.splitlines() if x.startswith("serve-model: warm-up "))
    return json.loads(line.split("warm-up ", 1)[1])


def test_committed_warmup_frame_is_a_model_sized_sim_frame() -> None:
    image = cv2.imread(str(DEFAULT_WARMUP_IMAGE))
    assert image is not None and image.shape == (360, 640, 3)
    assert DEFAULT_WARMUP_IMAGE.stat().st_size < 64 * 1024


def test_launch_wait_and_warm_up_against_serve_pilot() -> None:
    port = free_port()
    result = serve_model(
        "qwen3.5-2b-w4a16-orin", "--port", str(port), "--stop-after-warmup", "--command", FAKE_ENGINE
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"ready at http://127.0.0.1:{port}/v1 (Qwen/Qwen3.5-2B)" in result.stdout
    summary = warmup_summary(result.stdout)
    assert summary["ok"] is True
    # cold action call, warm action call, one plan-schema call (compiles that grammar too)
    assert [c["kind"] for c in summary["calls"]] == ["action", "action", "plan"]
    assert all(c["action"] for c in summary["calls"])
    assert f"pilot URL: openai://127.0.0.1:{port}/v1?profile=qwen3.5-2b" in result.stdout
    # the baseline behind serve-pilot saw a real frame: its replies were parsed actions, logged by the engine
    assert "listening on" in result.stderr


def test_engine_that_dies_is_reported_with_its_output() -> None:
    result = serve_model(
        "qwen3.5-2b-bf16",
        "--port",
        str(free_port()),
        "--command",
        "{python} -c \"import sys; print('engine: CUDA out of memory'); sys.exit(3)\"",
    )
    assert result.returncode == 1
    assert "exited with status 3" in result.stderr
    assert "CUDA out of memory" in result.stderr


def test_unusable_warmup_replies_stop_the_engine(tmp_path: Path) -> None:
    script = tmp_path / "replies.jsonl"
    script.write_text('{"action": "fly"}\n' * 5)
    port = free_port()
    result = serve_model(
        "qwen3.5-0.8b-bf16-orin",
        "--port",
        str(port),
        "--command",
        FAKE_ENGINE + f" --pilot scripted:{script}",
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert warmup_summary(result.stdout)["ok"] is False
    assert "warm-up replies were not usable" in result.stderr


def test_never_ready_times_out_and_the_process_group_is_ended() -> None:
    # a parent that forks a child, like an engine with workers; neither ever serves HTTP
    code = (
        "import subprocess, sys, time; "
        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); time.sleep(60)"
    )
    engine = EngineProcess([sys.executable, "-c", code]).start()
    try:
        started = time.monotonic()
        try:
            engine.wait_ready(f"http://127.0.0.1:{free_port()}", timeout_s=1.0, poll_s=0.1)
        except Exception as exc:
            assert "not ready after 1 s" in str(exc)
        else:
            raise AssertionError("wait_ready returned for a server that never answered")
        assert time.monotonic() - started < 30
    finally:
        assert engine.stop(timeout_s=10) is not None
    assert engine.proc is not None
    # the whole group got SIGTERM: nothing of it is left
    check = subprocess.run(["pgrep", "-g", str(engine.proc.pid)], capture_output=True, text=True)
    assert check.stdout.strip() == ""


def test_print_shows_the_command_and_what_is_unverified() -> None:
    result = serve_model("cosmos3-edge-2b-w4a16-orin", "--engine", "trtllm", "--print")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("trtllm-serve /models/cosmos3-edge-2b-w4a16 ")
    assert "guided_decoding_backend: xgrammar" in result.stdout
    assert "# verified on hardware: none" in result.stdout
    listing = serve_model("--list")
    assert "cosmos3-edge-2b-nvfp4-thor" in listing.stdout


def test_sigterm_while_waiting_stops_the_engine(tmp_path: Path) -> None:
    marker = f"engine-{tmp_path.name}"
    engine_pattern = f"^{re.escape(sys.executable)} -c .*{marker}"  # not serve-model's own argv
    proc = subprocess.Popen(
        dronecats_cmd(
            "serve-model",
            "qwen3.5-2b-bf16",
            "--port",
            str(free_port()),
            "--command",
            f'{{python}} -c "import time; time.sleep(120)  # {marker}"',
        ),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=subprocess_env(),
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # the engine is up (and never ready)
            if subprocess.run(["pgrep", "-f", engine_pattern], capture_output=True).returncode == 0:
                break
            time.sleep(0.1)
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
    finally:
        kill_if_running(proc)
    assert proc.returncode == 0, out
    assert "SIGTERM: stopping the engine" in out
    assert subprocess.run(["pgrep", "-f", engine_pattern], capture_output=True).returncode == 1
