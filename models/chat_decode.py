"""Reading a pilot's chat request back into its parts (for serve-pilot): which reply is asked for,
the instruction, the histories and the frames.

The inverse of models.templates/history/request: it relies on their fixed wording ("Instruction:",
the compact history lines, "Drone i:" blocks) and on the reply schema's shape.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from common.actions import Action, Finished, Go, Rotate, Think
from common.errors import ProtocolError
from models.backends.images import decode_data_url, split_content
from models.schemas import PLAN_FIELDS

_INSTRUCTION = re.compile(r"^Instruction:[ \t]*(.*)$", re.M)
_GO_XY = re.compile(r"GO x=(\d+) y=(\d+) depth=([-\d.]+)m")
_GO_YX = re.compile(r"GO y=(\d+) x=(\d+) depth=([-\d.]+)m")
_ROTATE = re.compile(r"ROTATE angle=([-\d.]+)deg")
_DRONE_BLOCK = re.compile(r"^Drone (\d+):(.*)$", re.M)
_HISTORY_LINE = re.compile(r"^\s*\d+\.\s+(.*?)(?:\s+<- most recent)?\s*$")


@dataclass
class DecodedChat:
    kind: str  # "action" | "plan" | "multi" | "commander"
    n_drones: int
    point_order: str  # "xy" | "yx"
    think: bool  # think is an allowed action
    instruction: str
    histories: list[list[Action]] = field(default_factory=list)  # one per drone
    last_actions: list[str] = field(default_factory=list)  # commander: one text per drone
    images: list[Any] = field(default_factory=list)  # BGR arrays in message order
    schema: dict[str, Any] | None = None


def parse_history_line(text: str) -> Action | None:
    """`GO x=612 y=430 depth=9m` (either axis order), `ROTATE angle=45deg`, `THINK`, `FINISHED`."""
    text = text.strip()
    if m := _GO_XY.fullmatch(text):
        return Go(point=(int(m.group(1)), int(m.group(2))), depth_m=float(m.group(3)))
    if m := _GO_YX.fullmatch(text):
        return Go(point=(int(m.group(2)), int(m.group(1))), depth_m=float(m.group(3)))
    if m := _ROTATE.fullmatch(text):
        return Rotate(angle_deg=float(m.group(1)))
    if text == "THINK":
        return Think()
    if text == "FINISHED":
        return Finished()
    return None


def parse_history(text: str) -> list[Action]:
    actions = []
    for line in text.splitlines():
        m = _HISTORY_LINE.match(line)
        if m and (action := parse_history_line(m.group(1))) is not None:
            actions.append(action)
    return actions


def _schema_kind(schema: dict[str, Any] | None, system: str) -> tuple[str, int | None, bool]:
    """(kind, N if the schema fixes it, think allowed) from the schema, else from the system text."""
    if schema:
        props = schema.get("properties") or {}
        if "drones" in props:
            drones = props["drones"]
            items = drones.get("items", {}) if isinstance(drones, dict) else {}
            enum = ((items.get("properties") or {}).get("action") or {}).get("enum", [])
            return "multi", drones.get("minItems"), "think" in enum
        if "orders" in props:
            return "commander", (props["orders"] or {}).get("minItems"), False
        enum = (props.get("action") or {}).get("enum", ["think"])
        kind = "plan" if any(f in props for f in PLAN_FIELDS) else "action"
        return kind, 1, "think" in enum
    if "You command a fleet" in system:
        return "commander", None, False
    if "pilot of a fleet" in system:
        return "multi", None, "3. think" in system
    return "action", 1, "3. think" in system


def decode_chat(body: dict[str, Any], schema: dict[str, Any] | None) -> DecodedChat:
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ProtocolError("request has no messages")
    system_parts: list[str] = []
    user_parts: list[str] = []
    image_urls: list[str] = []
    for message in messages:
        if not isinstance(message, dict) or message.get("role") not in (
            "system",
            "user",
            "developer",
            "assistant",
        ):
            raise ProtocolError(f"unsupported message {str(message)[:80]}")
        text, urls = split_content(message)
        if message["role"] in ("system", "developer"):
            system_parts.append(text)
        elif message["role"] == "user":
            user_parts.append(text)
            image_urls.extend(urls)
    system = "\n".join(system_parts)
    user = "\n".join(user_parts)
    kind, n_fixed, think = _schema_kind(schema, system)
    m = _INSTRUCTION.search(user)
    if not m or not m.group(1).strip():
        raise ProtocolError("user message has no 'Instruction: ...' line")
    instruction = m.group(1).strip()
    point_order = "yx" if '"point": [y, x]' in system else "xy"
    images = [decode_data_url(u) for u in image_urls]
    chat = DecodedChat(kind, 1, point_order, think, instruction, images=images, schema=schema)
    if kind == "action" or kind == "plan":
        if not images:
            raise ProtocolError("a pilot request needs the camera frame as an image part")
        chat.histories = [parse_history(user)]
        return chat
    blocks = _drone_blocks(user)
    n = n_fixed or len(blocks) or len(images)
    chat.n_drones = n
    if kind == "multi":
        chat.histories = [parse_history(blocks.get(i, "")) for i in range(1, n + 1)]
    else:
        chat.last_actions = [blocks.get(i, "").strip() for i in range(1, n + 1)]
    if len(images) < n:
        raise ProtocolError(f"{kind} request for {n} drones carries {len(images)} images")
    return chat


def _drone_blocks(user: str) -> dict[int, str]:
    """`Drone i:` headed blocks (multi: indented history lines; commander: text on the same line)."""
    blocks: dict[int, str] = {}
    matches = list(_DRONE_BLOCK.finditer(user))
    for k, m in enumerate(matches):
        end = matches[k + 1].start() if k + 1 < len(matches) else len(user)
        body = m.group(2) + "\n" + user[m.end() : end]
        # Stop at the first blank line: what follows is the closing text, not this drone's block.
        blocks.setdefault(int(m.group(1)), body.split("\n\n")[0])
    return blocks
