"""Reading "go to the red car"-style instructions into a (colour, class, mode) target."""

from __future__ import annotations

import re

import msgspec

from common.errors import ConfigError
from models.baseline.classes import CLASS_SYNONYMS, OBJECT_CLASSES
from models.baseline.colours import COLOUR_SYNONYMS, COLOURS


class TargetSpec(msgspec.Struct, frozen=True):
    object_class: str  # a key of OBJECT_CLASSES
    colour: str | None  # a key of COLOURS, or None when the instruction names no colour
    follow: bool = False  # "follow"/"track": a moving target, keep it in view
    # Where the instruction says the target is, relative to the drone's heading when it was given
    # ("... about 40 degrees to your right"): degrees, positive to the right; None when not said.
    direction_deg: float | None = None


# A commander's hint: "40 degrees to your right", "25 deg to the left", "straight ahead", "behind you".
_DIRECTION = re.compile(
    r"(?P<deg>\d+(?:\.\d+)?)\s*(?:degrees?|deg|°)\s+to\s+(?:your|the)\s+(?P<side>left|right)"
    r"|(?P<ahead>straight\s+ahead|dead\s+ahead)"
    r"|(?P<behind>behind\s+you)",
    re.I,
)


def parse_direction(text: str) -> float | None:
    """The relative direction an instruction gives for its target (deg, + right), or None."""
    match = _DIRECTION.search(text)
    if match is None:
        return None
    if match.group("ahead"):
        return 0.0
    if match.group("behind"):
        return 180.0
    degrees = float(match.group("deg"))
    return degrees if match.group("side").lower() == "right" else -degrees


_VERBS = (
    r"(?:go|fly|move|head|navigate|get)\s+(?:over\s+|up\s+)?(?:to|towards?)"
    r"|approach|reach|find|locate|follow|track|search\s+for|look\s+for"
)
_LEAD = re.compile(
    rf"^\s*(?:please\s+)?(?P<verb>{_VERBS})\s+(?:the\s+|a\s+|an\s+)?(?P<rest>.+?)\s*[.!]?\s*$", re.I
)


def parse_instruction(text: str) -> TargetSpec:
    """The target named by `text`; ConfigError when no known class is named."""
    match = _LEAD.match(text)
    rest = match.group("rest") if match else text
    verb = match.group("verb").lower() if match else ""
    words = re.findall(r"[a-z]+", rest.lower())
    colour: str | None = None
    object_class: str | None = None
    # The class is the first class word; the colour is the colour word right before it (or anywhere before).
    for index, word in enumerate(words):
        name = _class_name(word, words[index + 1] if index + 1 < len(words) else "")
        if name is None:
            continue
        object_class = name
        for previous in reversed(words[:index]):
            found = COLOUR_SYNONYMS.get(previous, previous if previous in COLOURS else None)
            if found:
                colour = found
                break
        break
    if object_class is None:
        raise ConfigError(
            f"baseline pilot cannot read the target in {text!r}; known classes: {sorted(OBJECT_CLASSES)}"
        )
    return TargetSpec(
        object_class, colour, follow=verb in ("follow", "track"), direction_deg=parse_direction(text)
    )


def _class_name(word: str, next_word: str) -> str | None:
    if f"{word} {next_word}" in CLASS_SYNONYMS:
        return CLASS_SYNONYMS[f"{word} {next_word}"]
    if word in OBJECT_CLASSES:
        return word
    if word.endswith("s") and word[:-1] in OBJECT_CLASSES:
        return word[:-1]
    return CLASS_SYNONYMS.get(word)
