"""The Jetson image's structure (no Docker here): every path Dockerfile.jetson copies and runs exists,
every package the editable install needs is copied, its pip list is pyproject's pure-Python
dependencies (never numpy/OpenCV/torch, which JetPack provides); the entrypoint and the health check
behave with a real OpenAI-compatible server (serve-pilot) standing in for the engine."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType

import pytest

from tests.support import ROOT
from tests.support.ports import free_port
from tests.support.processes import subprocess_env

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

DOCKERFILE = ROOT / "Dockerfile.jetson"
IMAGE_ROOT = "/opt/dronecats"
FAKE_ENGINE = "{python} -m dronecats serve-pilot --port {port} --model-name {served_model}"


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with line continuations joined and comments dropped."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def requirement_name(spec: str) -> str:
    return re.split(r"[<>=!~;\[ ]", spec.strip(), maxsplit=1)[0].lower()


def test_every_copied_path_exists() -> None:
    copies = [args for word, args in instructions() if word in ("COPY", "ADD")]
    assert copies
    for args in copies:
        parts = [p for p in shlex.split(args) if not p.startswith("--")]
        for source in parts[:-1]:
            assert (ROOT / source).exists(), f"Dockerfile.jetson copies {source}, which is not in the repo"


def test_entrypoint_and_healthcheck_exist_and_are_executable() -> None:
    entry = dict(instructions())["ENTRYPOINT"]
    argv = json.loads(entry)
    scripts = [a for a in argv if a.startswith(IMAGE_ROOT)]
    health = json.loads(dict(instructions())["HEALTHCHECK"].split("CMD", 1)[1])
    scripts += [a for a in health if a.startswith(IMAGE_ROOT)]
    assert len(scripts) == 2
    for script in scripts:
        path = ROOT / Path(script).relative_to(IMAGE_ROOT)
        assert path.is_file(), f"{script} is not in the repo"
        assert os.access(path, os.X_OK), f"{path} is not executable (git must keep the mode)"


def test_every_installed_package_is_copied() -> None:
    copied = {shlex.split(args)[0] for word, args in instructions() if word == "COPY"}
    patterns = pyproject()["tool"]["setuptools"]["packages"]["find"]["include"]
    assert patterns
    for pattern in patterns:
        top = pattern.rstrip("*").split(".")[0]
        assert top in copied, f"pyproject package {top} is not copied: pip install -e . would fail"


def test_pip_installs_pyprojects_pure_python_dependencies_only() -> None:
    runs = " ".join(args for word, args in instructions() if word == "RUN")
    installs = re.findall(r"pip install --no-cache-dir\s+((?:\"[^\"]+\"\s*)+)", runs)
    assert installs, "no dependency install found"
    names = {requirement_name(s) for s in shlex.split(" ".join(installs))}
    wanted = {requirement_name(d) for d in pyproject()["project"]["dependencies"]}
    from_jetpack = {"numpy", "opencv-python-headless"}
    assert wanted - from_jetpack <= names, f"missing from the image: {wanted - from_jetpack - names}"
    assert not names & (from_jetpack | {"torch", "opencv-python", "vllm"}), "would replace JetPack's builds"
    jetson_extra = {requirement_name(d) for d in pyproject()["project"]["optional-dependencies"]["jetson"]}
    assert jetson_extra <= names, f"the jetson extra is not installed: {jetson_extra - names}"
    assert "pip install --no-cache-dir --no-deps -e ." in runs


def load_healthcheck() -> ModuleType:
    spec = importlib.util.spec_from_file_location("healthcheck", ROOT / "docker" / "healthcheck.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_healthcheck(tmp_path: Path) -> None:
    from models.serve import make_pilot, start_server

    health = load_healthcheck()
    server, thread = start_server(make_pilot("baseline"))
    try:
        ready = tmp_path / "ready.json"
        local = {
            "DRONECATS_SERVE_PROFILE": "qwen3.5-2b-w4a16-orin",
            "DRONECATS_MODEL_PORT": str(server.port),
            "DRONECATS_READY_FILE": str(ready),
        }
        assert "not warm yet" in health.check(local)
        ready.write_text("{}")
        assert health.check(local) is None
        assert (
            health.check({"DRONECATS_PILOT": f"openai://127.0.0.1:{server.port}/v1?profile=qwen3.5-2b"})
            is None
        )
        assert health.check({}) is None  # baseline pilot: nothing to reach
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
    assert "127.0.0.1" in health.check(dict(local))  # the engine is gone: unhealthy


def entrypoint(env: dict[str, str], *args: str, timeout_s: float = 120.0) -> subprocess.CompletedProcess[str]:
    full = subprocess_env(**env)
    full["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{full.get('PATH', '')}"  # python3 = this one
    # output to a file: the background serve-model would hold a pipe open after onboard exits
    with tempfile.TemporaryFile("w+") as out:
        proc = subprocess.Popen(
            ["bash", str(ROOT / "docker" / "entrypoint.sh"), *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
            env=full,
            start_new_session=True,
        )
        try:
            proc.wait(timeout=timeout_s)
        finally:
            # the background serve-model (tini's job in the container) must not outlive the test
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            proc.wait()
            wait_group_gone(proc.pid)
        out.seek(0)
        return subprocess.CompletedProcess(proc.args, proc.returncode, out.read(), "")


def wait_group_gone(pgid: int, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)


def test_entrypoint_needs_a_vehicle() -> None:
    result = entrypoint({"DRONECATS_VEHICLE": ""})
    assert result.returncode != 0
    assert "set DRONECATS_VEHICLE" in result.stdout


def test_entrypoint_passes_subcommands_through() -> None:
    result = entrypoint({}, "serve-model", "--list")
    assert result.returncode == 0, result.stdout
    assert "qwen3.5-2b-w4a16-orin" in result.stdout


@pytest.mark.slow
def test_entrypoint_serves_warms_and_hands_the_pilot_url_to_onboard(tmp_path: Path) -> None:
    ready = tmp_path / "ready.json"
    result = entrypoint(
        {
            # an unknown vehicle scheme: onboard stops right after taking the pilot URL
            "DRONECATS_VEHICLE": "nosuch://drone",
            "DRONECATS_SERVE_PROFILE": "qwen3.5-2b-w4a16-orin",
            "DRONECATS_ENGINE_COMMAND": FAKE_ENGINE,
            "DRONECATS_MODEL_PORT": str(free_port()),
            "DRONECATS_READY_FILE": str(ready),
            "DRONECATS_LOG_DIR": str(tmp_path / "runs"),
            "DRONECATS_CONFIG": str(tmp_path / "absent.yaml"),
        }
    )
    assert '"ok": true' in result.stdout, result.stdout
    assert "pilot URL: openai://127.0.0.1:" in result.stdout
    assert "unknown scheme 'nosuch'" in result.stdout
    assert result.returncode == 2
