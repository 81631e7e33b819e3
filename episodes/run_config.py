"""What a run is: the configuration that determines an episode's outcome, and the code that flew it.

Every episode directory's result.json carries `config` (pilot URL and its model profile, latency
model, structure, commander, simulator, the record's hash, the runtime configuration) and
`code_version` (package version, `git describe`, dirty flag). Resume compares the stored `config`
with the one a new invocation would fly: equal, the episode is kept; different, the runner refuses
and names the difference (or flies it again under --force). A different code version alone is only
reported: code changes all the time during development, and most do not change outcomes.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from common.errors import ConfigError
from episodes.records import EpisodeRecord, record_to_json

if TYPE_CHECKING:
    from episodes.run_options import RunOptions
    from onboard.runtime_config import RuntimeConfig

REPO_ROOT = Path(__file__).resolve().parent.parent

# RuntimeConfig fields that change what is written, not what is flown: a resume with --no-frames
# may keep episodes flown with frames.
_NOT_OUTCOME = ("save_frames", "recorder")


@functools.lru_cache(maxsize=1)
def code_version() -> dict[str, Any]:
    """{"package": "0.1.0", "git": "9d44003-dirty" or None, "dirty": bool or None}."""
    try:
        package = importlib.metadata.version("dronecats")
    except importlib.metadata.PackageNotFoundError:
        package = None
    git: str | None = None
    try:
        done = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "describe", "--always", "--dirty", "--tags"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
        if done.returncode == 0 and done.stdout.strip():
            git = done.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        git = None  # an installed copy without git: the package version is all there is
    return {"package": package, "git": git, "dirty": git.endswith("-dirty") if git else None}


def _file_sha256(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    except OSError:
        return None


def pilot_identity(spec: str) -> dict[str, Any]:
    """The pilot URL plus what it points at: the model profile's name and content hash, or the
    scripted pilot's file hash. A profile edited between runs is another pilot."""
    identity: dict[str, Any] = {"url": spec, "profile": None, "profile_sha256": None}
    if spec.startswith("scripted:"):
        identity["file_sha256"] = _file_sha256(Path(spec.partition(":")[2]))
    elif "://" in spec:
        from models.backends.url import parse_backend_url
        from models.profile import resolve_profile_path

        name = parse_backend_url(spec).get_str("profile")
        identity["profile"] = name
        if name:
            try:
                identity["profile_sha256"] = _file_sha256(resolve_profile_path(name))
            except ConfigError:
                identity["profile_sha256"] = None  # the pilot itself reports the unknown profile
    return identity


def run_configuration(
    record: EpisodeRecord, options: RunOptions, runtime_config: RuntimeConfig
) -> dict[str, Any]:
    """The configuration that determines one episode's outcome (JSON-ready, compared on resume)."""
    structure = options.structure or record.structure
    runtime_fields = msgspec.to_builtins(runtime_config)
    for key in _NOT_OUTCOME:
        runtime_fields.pop(key, None)
    return {
        "pilot": pilot_identity(options.pilot),
        "latency": str(options.latency),
        "structure": structure,
        "commander": (options.commander or "rule") if structure == "commander" else None,
        # What was flown against, not the server's address: a HIL server restarted on another port
        # flies the same episodes (result.json keeps the URL), one with another api, lock-step mode,
        # asset map, server version or map does not.
        "sim": _simulator(options.sim_url),
        "record_sha256": hashlib.sha256(record_to_json(record)).hexdigest()[:16],
        "runtime": runtime_fields,
    }


def _simulator(sim_url: str | None) -> dict[str, Any]:
    if sim_url is None:
        return {"kind": "local lock-step"}
    from episodes.hil import simulator_identity

    return simulator_identity(sim_url)


def _flatten(value: object, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        flat: dict[str, Any] = {}
        for key, item in value.items():
            flat.update(_flatten(item, f"{prefix}.{key}" if prefix else str(key)))
        return flat
    return {prefix: value}


def config_differences(stored: dict[str, Any] | None, wanted: dict[str, Any]) -> list[str]:
    """Human-readable differences, e.g. "latency: 'measured' -> 'fixed:1'" (empty: the same)."""
    if stored is None:
        return ["no configuration recorded (flown by an older version)"]
    old, new = _flatten(stored), _flatten(wanted)
    out = []
    for key in sorted(set(old) | set(new)):
        if old.get(key) != new.get(key):
            out.append(f"{key}: {old.get(key)!r} -> {new.get(key)!r}")
    return out
