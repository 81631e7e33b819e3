"""The prompt files under models/prompts/ and how they are filled in (docs/protocol.md#prompts).

The system message depends only on (profile's point order, switches[, N]) and is built once, so
it is byte-identical at every step of every episode and a server's prefix cache keeps hitting.
Everything that changes (instruction, history, frames) goes in the user message.

Slots are `{name}` with a bare identifier inside; they are filled in one pass, so an instruction
that happens to contain "{history}" is inserted literally, and JSON examples in the prompt
(`{"action": ...}`) are never taken for slots.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from pathlib import Path

import msgspec

PROMPTS_DIR = Path(__file__).resolve().parent / "prompts"
_SLOT = re.compile(r"\{([a-z_][a-z0-9_]*)\}")

SYSTEM = "system.txt"
SYSTEM_THINK_OFF = "system_think_off.txt"
PLAN_RULE = "plan_rule.txt"
VISUAL_HISTORY_RULE = "visual_history_rule.txt"
USER = "user.txt"
USER_VISUAL_HISTORY = "user_visual_history.txt"
MULTI_SYSTEM = "multi_system.txt"
MULTI_SYSTEM_THINK_OFF = "multi_system_think_off.txt"
MULTI_USER = "multi_user.txt"
COMMANDER_SYSTEM = "commander_system.txt"
COMMANDER_USER = "commander_user.txt"


class PromptSwitches(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The policy switches (docs/protocol.md#think-and-the-plan-schema). They are fixed for an episode
    and part of its identity."""

    think: bool = True  # False: "think off", no think in prompt or schema
    plan_schema: bool = True  # the call after a think answers the plan schema
    visual_history: bool = False  # add the last views, half width, to the text history

    @property
    def uses_plan(self) -> bool:
        return self.think and self.plan_schema


@functools.cache
def read_prompt(name: str) -> str:
    """A prompt file's text, exactly as committed (cached: the files are read once per process)."""
    return (PROMPTS_DIR / name).read_text(encoding="utf-8")


def fill(template: str, **slots: str) -> str:
    """Fill `{slot}`s in one pass; a slot without a value is an error (a template bug)."""
    missing = {m.group(1) for m in _SLOT.finditer(template)} - slots.keys()
    if missing:
        raise KeyError(f"prompt slots without a value: {', '.join(sorted(missing))}")
    return _SLOT.sub(lambda m: slots[m.group(1)], template)


# ---- which files a prompt is made of (the flight recorder hashes exactly these) ----------------


def single_files(switches: PromptSwitches) -> tuple[str, ...]:
    files = [SYSTEM if switches.think else SYSTEM_THINK_OFF]
    if switches.uses_plan:
        files.append(PLAN_RULE)
    if switches.visual_history:
        files += [VISUAL_HISTORY_RULE, USER_VISUAL_HISTORY]
    else:
        files.append(USER)
    return tuple(files)


def multi_files(switches: PromptSwitches) -> tuple[str, ...]:
    return (MULTI_SYSTEM if switches.think else MULTI_SYSTEM_THINK_OFF, MULTI_USER)


def commander_files() -> tuple[str, ...]:
    return (COMMANDER_SYSTEM, COMMANDER_USER)


# ---- single drone --------------------------------------------------------------------------------


def single_system(point_fmt: str, switches: PromptSwitches) -> str:
    text = fill(read_prompt(SYSTEM if switches.think else SYSTEM_THINK_OFF), point_fmt=point_fmt)
    if switches.uses_plan:
        text += read_prompt(PLAN_RULE)
    if switches.visual_history:
        text += read_prompt(VISUAL_HISTORY_RULE)
    return text


def single_user(instruction: str, history: str, switches: PromptSwitches) -> str:
    template = read_prompt(USER_VISUAL_HISTORY if switches.visual_history else USER)
    return fill(template, instruction=instruction.strip(), history=history)


# ---- N drones in one context ----------------------------------------------------------------------


def multi_system(point_fmt: str, n_drones: int, switches: PromptSwitches) -> str:
    template = read_prompt(MULTI_SYSTEM if switches.think else MULTI_SYSTEM_THINK_OFF)
    return fill(template, point_fmt=point_fmt, n_drones=str(n_drones))


def multi_user(instruction: str, histories: Sequence[str]) -> str:
    blocks = []
    for i, history in enumerate(histories, start=1):
        indented = "\n".join("  " + line for line in history.splitlines())
        blocks.append(f"Drone {i}:\n{indented}")
    return fill(
        read_prompt(MULTI_USER),
        instruction=instruction.strip(),
        history="\n".join(blocks),
        n_drones=str(len(histories)),
    )


# ---- commander ------------------------------------------------------------------------------------


def commander_system(n_drones: int) -> str:
    return fill(read_prompt(COMMANDER_SYSTEM), n_drones=str(n_drones))


def commander_user(instruction: str, last_actions: Sequence[str], with_map: bool) -> str:
    lines = "\n".join(f"Drone {i}: {text}" for i, text in enumerate(last_actions, start=1))
    note = ", followed by a top-down map of the drones' positions and headings" if with_map else ""
    return fill(
        read_prompt(COMMANDER_USER),
        instruction=instruction.strip(),
        last_actions=lines,
        n_drones=str(len(last_actions)),
        map_note=note,
    )
