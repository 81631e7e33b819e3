"""Prompt hashes for the episode log (docs/protocol.md#prompts): a fine-tuned model is only in distribution
with the prompt it was trained on, so the prompt files are part of the model's identity.

    ident = prompt_identity(profile, switches, structure="single")
    record["prompt_hashes"] = ident.prompt_hashes; record["pilot_identity"] = ident.identity_sha256
"""

from __future__ import annotations

import functools
import hashlib
from typing import Literal

import msgspec

from models.profile import ModelProfile
from models.templates import PROMPTS_DIR, PromptSwitches, commander_files, multi_files, single_files

Structure = Literal["single", "multi", "commander"]


class PromptIdentity(msgspec.Struct, frozen=True):
    profile: str
    structure: str
    n_drones: int
    switches: PromptSwitches
    prompt_hashes: dict[str, str]  # file name -> sha256 hex of its bytes
    identity_sha256: str  # over (profile contents, prompt hashes, switches, structure, N)


@functools.cache
def prompt_file_sha256(name: str) -> str:
    return hashlib.sha256((PROMPTS_DIR / name).read_bytes()).hexdigest()


def prompt_files(switches: PromptSwitches, structure: Structure = "single") -> tuple[str, ...]:
    if structure == "single":
        return single_files(switches)
    if structure == "multi":
        return multi_files(switches)
    if structure == "commander":
        return commander_files()
    raise ValueError(f"structure={structure!r} must be single, multi or commander")


def prompt_identity(
    profile: ModelProfile,
    switches: PromptSwitches | None = None,
    structure: Structure = "single",
    n_drones: int = 1,
) -> PromptIdentity:
    switches = switches or PromptSwitches()
    hashes = {name: prompt_file_sha256(name) for name in prompt_files(switches, structure)}
    canonical = msgspec.json.encode(
        {
            "profile": msgspec.to_builtins(profile),
            "prompts": hashes,
            "switches": msgspec.to_builtins(switches),
            "structure": structure,
            "n_drones": n_drones,
        },
        order="sorted",
    )
    return PromptIdentity(
        profile=profile.name,
        structure=structure,
        n_drones=n_drones,
        switches=switches,
        prompt_hashes=hashes,
        identity_sha256=hashlib.sha256(canonical).hexdigest(),
    )
