"""The Jetson image's structure (no Docker here): every path Dockerfile.jetson copies and runs exists,
every package the editable install needs is copied, its pip lists are pyproject's dependencies
(never numpy/OpenCV/torch, which the base image provides) and what every vehicle scheme imports;
the entrypoint and the health check behave with a real OpenAI-compatible server (serve-pilot)
standing in for the engine."""

from __future__ import annotations

import ast
import contextlib
import importlib.metadata
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

from tests.support import ROOT, project_packages
from tests.support.ports import free_port
from tests.support.processes import subprocess_env

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

DOCKERFILE = ROOT / "Dockerfile.jetson"
IMAGE_ROOT = "/opt/dronecats"
# What the base image (NVIDIA's vLLM for Jetson) provides and the image must never replace.
FROM_BASE = {"numpy", "opencv-python-headless"}
NEVER_INSTALLED = FROM_BASE | {"torch", "opencv-python", "opencv-contrib-python", "vllm"}
OUR_PACKAGES = set(project_packages())
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


def run_commands() -> list[list[str]]:
    """Each command of the RUN instructions (split at &&) as argv."""
    runs = [args for word, args in instructions() if word == "RUN"]
    return [shlex.split(command) for run in runs for command in run.split("&&")]


def pip_installs() -> list[tuple[set[str], list[str]]]:
    """(options, requirements) of each `pip install` in the RUN instructions ("." for the project)."""
    installs = []
    for argv in run_commands():
        if "pip" in argv and "install" in argv:
            rest = argv[argv.index("install") + 1 :]
            installs.append(
                ({a for a in rest if a.startswith("-")}, [a for a in rest if not a.startswith("-")])
            )
    return installs


def installed_names() -> set[str]:
    return {requirement_name(r) for _, reqs in pip_installs() for r in reqs if r != "."}


def test_pip_installs_pyprojects_dependencies_but_never_the_base_images_builds() -> None:
    installs = pip_installs()
    assert installs, "no dependency install found"
    names = installed_names()
    wanted = {requirement_name(d) for d in pyproject()["project"]["dependencies"]}
    assert wanted - FROM_BASE <= names, f"missing from the image: {wanted - FROM_BASE - names}"
    assert not names & NEVER_INSTALLED, "would replace the base image's builds"
    extras = pyproject()["project"]["optional-dependencies"]
    for extra in ("jetson", "vehicles", "airsim"):
        missing = {requirement_name(d) for d in extras[extra]} - names
        assert not missing, f"the {extra} extra is not installed in the image: {missing}"
    assert ({"--no-cache-dir", "--no-deps", "-e"}, ["."]) in installs


def test_the_no_deps_installs_are_setup_envs_pins() -> None:
    """The packages whose declared requirements would replace a build (djitellopy's opencv-python,
    airsim's opencv-contrib-python and msgpack<1) go in --no-deps at the same pins as in
    scripts/setup_env.sh; MAVProxy there is the dev-only ground station of the tests."""
    script = (ROOT / "scripts" / "setup_env.sh").read_text()
    pins = set(re.findall(r"install --no-deps (?:--no-build-isolation )?([\w.-]+==[\w.]+)", script))
    runtime_pins = {p for p in pins if requirement_name(p) != "mavproxy"}
    assert runtime_pins, "no --no-deps pins found in scripts/setup_env.sh"
    image = {r for options, reqs in pip_installs() if "--no-deps" in options for r in reqs if r != "."}
    assert image == runtime_pins


def third_party_imports(start: str) -> set[str]:
    """Top-level names of the non-project, non-stdlib modules that `start` and the project modules it
    reaches import, at module level or inside functions (adapters import their clients lazily); the
    `if TYPE_CHECKING:` blocks are skipped, as at run time."""
    found: set[str] = set()
    seen: set[str] = set()
    todo = [start]
    while todo:
        name = todo.pop()
        path = ROOT / Path(*name.split("."))
        path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
        if name in seen or not path.is_file():
            continue  # an attribute (`from x import name`), not a module
        seen.add(name)
        nodes: list[ast.AST] = [ast.parse(path.read_text())]
        while nodes:
            node = nodes.pop()
            if (
                isinstance(node, ast.If)
                and isinstance(node.test, ast.Name)
                and node.test.id == "TYPE_CHECKING"
            ):
                nodes.extend(node.orelse)
                continue
            nodes.extend(ast.iter_child_nodes(node))
            if isinstance(node, ast.Import):
                modules = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                modules = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            else:
                continue
            for module in modules:
                top = module.split(".")[0]
                if top in OUR_PACKAGES:
                    todo.append(module)
                elif top not in sys.stdlib_module_names and top != "__future__":
                    found.add(top)
    return found


def interfaces_factory_module(scheme: str) -> str:
    """The module of the adapter that opens `scheme://` URLs (common.interfaces' registry)."""
    from common import interfaces

    factory = interfaces._VEHICLES.factory(f"{scheme}://")
    assert factory is not None
    return factory.__module__


def scheme_imports() -> dict[str, set[str]]:
    """Every vehicle scheme -> what its adapter imports (the airsim:// adapter also imports its client
    packages by name, `CLIENT_PACKAGES`)."""
    from common import interfaces
    from onboard.vehicles.airsim import CLIENT_PACKAGES

    out = {
        scheme: third_party_imports(interfaces_factory_module(scheme))
        for scheme in interfaces.vehicle_schemes()
    }
    out["airsim"] |= set(CLIENT_PACKAGES.values())
    return out


def import_time_modules(module: str) -> set[str]:
    """Top-level modules of installed distributions (not ours) that importing `module` loads, here."""
    code = f"import sys; before = set(sys.modules); import {module}; print(*set(sys.modules) - before)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    loaded = {m.split(".")[0] for m in result.stdout.split()}
    return loaded & set(importlib.metadata.packages_distributions()) - OUR_PACKAGES


def distributions_of(module: str) -> set[str]:
    names = importlib.metadata.packages_distributions().get(module, [module])
    return {requirement_name(n).replace("_", "-") for n in names}


def test_every_vehicle_scheme_has_what_it_imports_in_the_image() -> None:
    schemes = scheme_imports()
    assert {"airsim", "mavlink", "tello"} <= set(schemes)
    names = installed_names() | FROM_BASE
    core = {requirement_name(d) for d in pyproject()["project"]["dependencies"]}
    checked = [argv for argv in run_commands() if argv[:2] == ["python3", "-c"] and "import" in argv[2]]
    assert len(checked) == 1, "the build's import check is missing"
    build_imports = {m.strip() for m in checked[0][2].removeprefix("import").split(",")}
    for scheme, modules in schemes.items():
        adapter = interfaces_factory_module(scheme)
        assert adapter in build_imports, f"the build does not import {adapter} ({scheme}://)"
        for module in modules:
            dists = distributions_of(module)
            assert dists & names, f"{scheme}://: {module} is not installed in the image"
            if not dists & core:  # a core dependency is imported by the adapter itself
                assert module in {m.split(".")[0] for m in build_imports}, (
                    f"the build does not import {module}"
                )
    # the packages installed --no-deps bring none of their declared requirements: what they load on
    # import must be in the image too (djitellopy: av and numpy; airsim: msgpackrpc, tornado, numpy)
    for options, reqs in pip_installs():
        for req in reqs if "--no-deps" in options else []:
            if req != ".":
                dist = importlib.metadata.distribution(requirement_name(req))
                top = (dist.read_text("top_level.txt") or requirement_name(req)).split()[0]
                for module in import_time_modules(top):
                    assert distributions_of(module) & names, f"{req} imports {module}, not in the image"


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
