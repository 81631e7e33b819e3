"""A suite of episodes flown into one directory, resumable: one after another, or across local
processes (`jobs`), or by any other flyer (episodes.ray_runner's RayFlyer: Ray tasks on a cluster;
the command line chooses).

Each episode is episodes.episode.run_episode. Run directory layout: OUT/<episode id>[-rK]/ holds the
episode's log files (docs/logs.md) and, written atomically last, `result.json` with the verdict, the
configuration that determined the outcome and the code version (episodes.run_config). A directory
with result.json is complete: a resume keeps it when its configuration is the one asked for, and
otherwise refuses, naming the difference (--force flies it again). One without result.json was
interrupted and is moved aside to OUT/.partial/ and flown again, so no episode is lost or counted
twice. OUT/run.json records the last invocation's options and code version.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import msgspec

from common.errors import ConfigError
from episodes.episode import RESULT_FILE, atomic_write, episode_configuration, run_episode
from episodes.records import record_to_json
from episodes.run_config import code_version, config_differences
from episodes.run_options import RunOptions
from episodes.suites import Suite, SuiteEntry, iter_ids

log = logging.getLogger(__name__)

PARTIAL_DIR = ".partial"


# ---- a suite --------------------------------------------------------------------------------------
@dataclass
class SuiteProgress:
    total: int
    done: int = 0
    skipped: int = 0
    successes: int = 0
    failed_to_run: int = 0
    sim_time_s: float = 0.0
    wall_time_s: float = 0.0
    cpu_time_s: float = 0.0

    def line(self, last: dict | None = None) -> str:
        width = 30
        filled = int(width * self.done / max(1, self.total))
        rate = self.successes / self.done if self.done else 0.0
        tail = ""
        if last is not None:
            verdict = last.get("verdict") or {}
            tail = f"  {last['run_name']}: {'success' if verdict.get('success') else 'failure'}"
        return (
            f"[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total}  "
            f"SR {rate:.0%} ({self.successes}/{self.done})" + tail
        )


def _run_summary(options: RunOptions, version: dict[str, Any]) -> dict[str, Any]:
    return {
        "pilot": options.pilot,
        "latency": str(options.latency),
        "structure": options.structure,
        "commander": options.commander,
        "sim": options.sim_url or "local lock-step",
        "fly_on": options.fly_on,
        "t_max_s": options.t_max_s,
        "min_decision_period_s": options.min_decision_period_s,
        "code_version": version,
        "invoked_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def _complete(directory: Path) -> dict | None:
    try:
        return json.loads((directory / RESULT_FILE).read_text())
    except (OSError, ValueError):
        return None


def _set_aside(out: Path, directory: Path) -> None:
    """An interrupted run's directory: moved under .partial/ (kept for a post-mortem, never scored)."""
    aside = out / PARTIAL_DIR / f"{directory.name}-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
    aside.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(directory), str(aside))
    log.info("interrupted run %s moved to %s", directory.name, aside)


def _worker(record_json: bytes, out: str, options: RunOptions, run_name: str) -> dict:
    # Worker processes log warnings only: the parent prints the progress line.
    logging.basicConfig(level=logging.WARNING)
    from common.errors import DroneCatsError
    from episodes.records import record_from_dict

    record = record_from_dict(json.loads(record_json), run_name)
    try:
        return run_episode(record, Path(out), options, run_name)
    except KeyboardInterrupt:
        return {"run_name": run_name, "interrupted": True}
    except DroneCatsError as exc:  # reported by the parent; the suite goes on
        return {"run_name": run_name, "error": str(exc)}


# ---- how the episodes are flown -------------------------------------------------------------------
Todo = list[tuple[SuiteEntry, str]]  # (entry, run name) of each episode still to fly


@dataclass(frozen=True)
class Report:
    """What a Flyer tells run_suite: each complete episode's result (`account`), each episode that could
    not run (`failed`: run name, why), and progress lines (`say`)."""

    account: Callable[[dict], None]
    failed: Callable[[str, str], None]
    say: Callable[[str], None]


class Flyer(Protocol):
    """Flies the episodes still to fly into OUT/<run name>/, reporting each as it ends."""

    @property
    def label(self) -> str: ...  # how the summary line names it: "2 job(s)", "Ray"

    def fly(self, todo: Todo, out: Path, options: RunOptions, report: Report) -> None: ...


@dataclass(frozen=True)
class LocalFlyer:
    """On this machine: one episode after another in this process, or `jobs` worker processes."""

    jobs: int = 1

    @property
    def label(self) -> str:
        return f"{self.jobs} job(s)"

    def fly(self, todo: Todo, out: Path, options: RunOptions, report: Report) -> None:
        from common.errors import DroneCatsError

        if self.jobs > 1:
            self._fly_in_processes(todo, out, options, report)
            return
        for entry, run_name in todo:
            try:
                report.account(run_episode(entry.record, out / run_name, options, run_name))
            except DroneCatsError as exc:
                report.failed(run_name, str(exc))

    def _fly_in_processes(self, todo: Todo, out: Path, options: RunOptions, report: Report) -> None:
        import multiprocessing

        context = multiprocessing.get_context("spawn" if options.sim_url else "fork")
        with ProcessPoolExecutor(max_workers=self.jobs, mp_context=context) as pool:
            pending: dict[Future, str] = {}
            queue = list(todo)
            try:
                while queue or pending:
                    while queue and len(pending) < self.jobs:
                        entry, run_name = queue.pop(0)
                        future = pool.submit(
                            _worker, record_to_json(entry.record), str(out / run_name), options, run_name
                        )
                        pending[future] = run_name
                    finished, _ = wait(pending, return_when=FIRST_COMPLETED)
                    for future in finished:
                        run_name = pending.pop(future)
                        result = future.result()
                        if result.get("interrupted"):
                            raise KeyboardInterrupt
                        if "error" in result:
                            report.failed(run_name, result["error"])
                        else:
                            report.account(result)
            except BaseException:
                pool.shutdown(wait=False, cancel_futures=True)
                raise


def run_suite(
    suite: Suite,
    out: Path,
    options: RunOptions,
    repeat: int = 1,
    jobs: int = 1,
    say: Callable[[str], None] = lambda line: None,
    errors: list[tuple[str, str]] | None = None,
    force: bool = False,
    flyer: Flyer | None = None,
) -> list[dict]:
    """Run every episode of the suite not yet complete in `out`; returns every complete result.

    A complete episode is kept only when it was flown with this configuration
    (episode_configuration); otherwise a ConfigError names the differences before anything is
    flown, or, with `force`, the episode is set aside and flown again. Another code version is only
    reported. An episode that cannot be flown (pre-flight checks, a pilot or server that fails: a
    DroneCatsError) is reported through `say`, appended to `errors` and left without result.json, so a
    later resume tries it again; the other episodes go on. `flyer` flies the episodes (default: a
    LocalFlyer with `jobs` processes; episodes.ray_runner.RayFlyer: Ray tasks on a cluster, in as many
    slots as it has); the layout is the same."""
    flyer = flyer or LocalFlyer(jobs)
    keep: list[tuple[str, dict]] = []
    stale: list[tuple[str, list[str]]] = []
    todo: Todo = []
    other_code: set[str] = set()
    version = code_version()
    for entry, run_name in iter_ids(suite, repeat):
        done = _complete(out / run_name)
        if done is not None:
            differences = config_differences(done.get("config"), episode_configuration(entry.record, options))
            if not differences:
                keep.append((run_name, done))
                flown_by = done.get("code_version") or {}
                if (flown_by.get("git"), flown_by.get("package")) != (version["git"], version["package"]):
                    other_code.add(str(flown_by.get("git") or flown_by.get("package") or "unknown"))
                continue
            stale.append((run_name, differences))
        todo.append((entry, run_name))
    if stale and not force:
        shown = "\n".join(f"  {name}: {'; '.join(diff)}" for name, diff in stale[:5])
        more = f"\n  ... and {len(stale) - 5} more" if len(stale) > 5 else ""
        raise ConfigError(
            f"{out} holds {len(stale)} complete run(s) flown with another configuration; nothing was "
            f"flown. Use another --out, or --force to fly them again:\n{shown}{more}"
        )

    out.mkdir(parents=True, exist_ok=True)
    atomic_write(out / "suite.json", msgspec.json.format(msgspec.json.encode(suite), indent=1) + b"\n")
    atomic_write(out / "run.json", json.dumps(_run_summary(options, version), indent=1).encode() + b"\n")
    results: list[dict] = []
    progress = SuiteProgress(total=len(keep) + len(todo))
    for _, done in keep:
        results.append(done)
        progress.skipped += 1
        progress.done += 1
        progress.successes += bool((done.get("verdict") or {}).get("success"))
    for _, run_name in todo:
        if (out / run_name).exists():
            _set_aside(out, out / run_name)
    if stale:
        say(f"--force: flying {len(stale)} run(s) again (another configuration; old ones in {PARTIAL_DIR}/)")
    if progress.skipped:
        say(f"resuming: {progress.skipped} of {progress.total} runs already complete in {out}")
    if other_code:
        message = (
            f"warning: kept runs were flown by code version {', '.join(sorted(other_code))}; this is "
            f"{version['git'] or version['package']} (same configuration, so they are kept)"
        )
        log.warning("%s", message)
        say(message)
    wall0 = time.monotonic()

    def account(result: dict) -> None:
        results.append(result)
        progress.done += 1
        progress.successes += bool((result.get("verdict") or {}).get("success"))
        progress.sim_time_s += float(result.get("sim_time_s") or 0.0)
        progress.cpu_time_s += float(result.get("cpu_time_s") or 0.0)
        say(progress.line(result))

    def failed(run_name: str, message: str) -> None:
        progress.failed_to_run += 1
        if errors is not None:
            errors.append((run_name, message))
        say(f"{run_name}: could not run: {message}")

    flyer.fly(todo, out, options, Report(account, failed, say))
    progress.wall_time_s = time.monotonic() - wall0
    ran = progress.done - progress.skipped
    if ran:
        rtf = progress.sim_time_s / progress.wall_time_s if progress.wall_time_s else float("nan")
        say(
            f"ran {ran} episodes in {progress.wall_time_s:.0f} s wall for {progress.sim_time_s:.0f} s of "
            f"simulated flight: real-time factor {rtf:.2f} with {flyer.label}; "
            "the episodes used "
            f"{progress.cpu_time_s:.0f} s of CPU ({progress.cpu_time_s / max(1, jobs):.0f} s per job slot "
            "on an otherwise idle machine)"
        )
    return results
