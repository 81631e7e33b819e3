"""The documentation's commands run as written (tests/support/doc_commands.py says how a page marks
its blocks, and how they are run).

- Every shell or Python block is marked run, serve or manual (with the reason), and an unlabelled
  block holds no commands, so no command escapes the check by its formatting.
- Each page's run and serve blocks run in order in a scratch directory, with the project's `.venv`
  active; each block must exit 0.
- Every `dronecats` command anywhere in the text (prose, manual blocks too) names a subcommand that
  exists and only options that subcommand has, spelled in full.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.djitellopy_ports import free_for_a_child_process
from tests.support.doc_commands import (
    ROOT,
    RUNNABLE_LANGS,
    SHELL_LANGS,
    Block,
    PageRun,
    blocks,
    doc_files,
    looks_like_commands,
    page_options,
)

BLOCK_TIMEOUT_S = 240.0
INLINE = re.compile(r"`((?:\.venv/bin/)?dronecats [^`]+)`")
FENCED = re.compile(r"^ {0,3}```.*?^ {0,3}```", re.M | re.S)


def all_blocks() -> list[Block]:
    return [b for path in doc_files() for b in blocks(path)]


def runnable_pages() -> list[Path]:
    return [p for p in doc_files() if any(b.mode in ("run", "serve") for b in blocks(p))]


def page_params() -> list[object]:
    """One test a page; a page that holds fixed ports (djitellopy's) runs in their xdist group."""
    params = []
    for page in runnable_pages():
        group = page_options(page).get("xdist-group")
        marks = [pytest.mark.xdist_group(group)] if group else []
        params.append(pytest.param(page, marks=marks, id=str(page.relative_to(ROOT))))
    return params


def test_the_docs_have_runnable_blocks() -> None:
    assert len(runnable_pages()) >= 5  # the extraction finds the pages (a broken regex finds none)


def test_every_command_block_says_how_it_runs() -> None:
    unmarked = [
        f"{b.where}: mark it <!-- doc-test: run|serve|manual: why -->"
        for b in all_blocks()
        if b.lang in RUNNABLE_LANGS and not b.mode
    ]
    unlabelled = [
        f"{b.where}: commands in a block without a language: fence it ```bash (or ```text for a synopsis)"
        for b in all_blocks()
        if b.lang == "" and looks_like_commands(b)
    ]
    incomplete = [
        f"{b.where}: save: FILE names the file" for b in all_blocks() if b.mode == "save" and not b.reason
    ] + [
        f"{b.where}: say why it cannot run here" for b in all_blocks() if b.mode == "manual" and not b.reason
    ]
    incomplete += [
        f"{b.where}: a run block's clauses are `needs MODULE` and `exits N`"
        for b in all_blocks()
        if set(b.clauses()) - {"needs", "exits"} or not b.clauses().get("exits", "0").isdigit()
    ]
    assert not unmarked + unlabelled + incomplete, "\n".join(unmarked + unlabelled + incomplete)


def test_pages_with_bare_commands_say_to_activate_the_venv() -> None:
    bare = re.compile(r"^(dronecats|python) ", re.M)
    missing = sorted(
        {
            str(b.where.split(":")[0])
            for b in all_blocks()
            if b.lang in SHELL_LANGS
            and any(bare.match(c) for c in b.commands())
            and "source .venv/bin/activate" not in b.path.read_text()
        }
    )
    assert not missing, (
        f"bare `dronecats`/`python` without `source .venv/bin/activate` on the page: {missing}"
    )


@pytest.mark.slow
@pytest.mark.parametrize("page", page_params())
def test_page_commands_run_as_written(page: Path, tmp_path: Path) -> None:
    for block in blocks(page):
        # `run: needs torch`: the page runs where that module is installed (CI's model step, after the
        # hf extra); elsewhere it is skipped, named
        missing = [m for m in block.needs if importlib.util.find_spec(m) is None]
        if missing:
            pytest.skip(
                f"{block.where} needs {', '.join(missing)} (the hf extra; .ci/run's model step runs it)"
            )
    if page_options(page).get("xdist-group") == "djitellopy":
        free_for_a_child_process()  # the page's djitellopy script binds them
    run = PageRun(page, tmp_path / "work")
    entry_point = ROOT / ".venv" / "bin" / "dronecats"
    installed = entry_point.read_bytes()  # a block that reinstalled into the shared .venv changes it
    failures: list[str] = []
    try:
        for block in blocks(page):
            if block.mode == "serve":
                run.start_servers(block)
            elif block.mode == "save":
                run.save_block(block)
            elif block.mode == "run":
                done = run.run_block(block, BLOCK_TIMEOUT_S)
                if done.returncode != block.exit_status:
                    failures.append(
                        f"{block.where}: exit {done.returncode} (the page says {block.exit_status})\n"
                        f"{done.stdout[-4000:]}"
                    )
                    break  # the page's later blocks build on this one
    finally:
        run.close()
    assert entry_point.read_bytes() == installed, f"{page}: a block reinstalled the project into .venv"
    assert not failures, "\n".join(failures) + "\n--- transcript ---\n" + "\n".join(run.transcript)[-6000:]


def _dronecats_commands() -> list[tuple[str, str]]:
    """(where, command) for every `dronecats ...` the text shows, in blocks and in prose."""
    found: list[tuple[str, str]] = []
    for path in doc_files():
        text = path.read_text()
        for m in INLINE.finditer(FENCED.sub("", text)):
            found.append((f"{path.name}: `{m.group(1)[:50]}`", m.group(1)))
        for b in blocks(path):
            if b.lang in (*SHELL_LANGS, "text", ""):  # a synopsis's options are checked too
                for command in b.commands():
                    for part in re.split(r"\s(?:&&|\|\||;|\|)\s|\s&$", command):
                        if re.match(r"^(\.venv/bin/)?dronecats ", part.strip()):
                            found.append((b.where, part.strip()))
    return found


def _option_names(parser: argparse.ArgumentParser) -> set[str]:
    return {o for a in parser._actions for o in a.option_strings}


def _check_command(command: str) -> str:
    """'' when `command`'s subcommand exists and its options are its own; else what is wrong."""
    from dronecats.cli import SUBCOMMANDS, build_parser

    try:
        words = shlex.split(command.split(" # ")[0], comments=False)
    except ValueError as exc:
        return f"cannot split ({exc})"
    words = words[1:]  # dronecats
    top = build_parser()
    top_options = _option_names(top)
    while words and words[0] in top_options:  # --log-level X before the subcommand
        words = words[2:]
    if not words:
        return ""  # `dronecats --help`, or the command's name in prose
    if words[0].endswith(":"):
        return ""  # a message the command prints (`dronecats onboard: ...`), not a command line
    if words[0] not in SUBCOMMANDS:
        return f"no subcommand {words[0] if words else ''!r}"
    sub_action = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
    parser = sub_action.choices[words[0]]
    importlib.import_module(SUBCOMMANDS[words[0]][0]).add_arguments(parser)
    rest = words[1:]
    nested = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
    if nested is not None:
        if not rest:
            return ""  # `dronecats episodes`: the family's name in prose
        if rest[0] not in nested.choices:
            return f"no action {rest[0]!r} (choose from {', '.join(nested.choices)})"
        parser, rest = nested.choices[rest[0]], rest[1:]
    known = _option_names(parser) | top_options
    bad = [
        w.split("=", 1)[0]
        for w in rest
        if w.startswith("--") and w.split("=", 1)[0].strip("[]|") not in known
    ]
    return f"unknown options {bad}" if bad else ""


def test_every_documented_dronecats_command_names_real_options() -> None:
    commands = _dronecats_commands()
    assert len(commands) > 50
    wrong = [
        f"{where}: {problem}: {command}"
        for where, command in commands
        if (problem := _check_command(command))
    ]
    assert not wrong, "\n".join(wrong)


SCRIPT = re.compile(r"^(?:\.venv/bin/)?python3? (benchmarks/\w+\.py|scripts/\w+\.py)(.*)$")


def test_every_documented_script_command_names_real_options() -> None:
    """`python benchmarks/X.py --opt ...`: the script exists and its --help lists each option used (the
    benchmarks are run by hand, never in CI, so this is what keeps their documented lines true)."""
    uses: dict[str, set[str]] = {}
    for b in all_blocks():
        if b.lang in SHELL_LANGS:
            for command in b.commands():
                if m := SCRIPT.match(command.split(" # ")[0].strip()):
                    options = {w.split("=", 1)[0] for w in shlex.split(m.group(2)) if w.startswith("--")}
                    uses.setdefault(m.group(1), set()).update(options)
    assert len(uses) >= 3
    wrong = []
    for script, options in sorted(uses.items()):
        done = subprocess.run(
            [sys.executable, script, "--help"], cwd=ROOT, capture_output=True, text=True, timeout=120
        )
        if done.returncode != 0:
            wrong.append(f"{script} --help: exit {done.returncode}: {done.stderr[-300:]}")
            continue
        wrong += [
            f"{script}: no option {o}"
            for o in sorted(options)
            if not re.search(rf"{re.escape(o)}\b", done.stdout)
        ]
    assert not wrong, "\n".join(wrong)
