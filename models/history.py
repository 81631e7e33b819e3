"""The action history shown to the model (docs/protocol.md#history): the last 5 executed actions,
oldest first.

Compact forms: `GO x=612 y=430 depth=9m`, `ROTATE angle=45deg`, `THINK`, `FINISHED`, one per line,
numbered, the most recent tagged. Only executed actions belong here: a discarded (stale or
malformed) reply is logged by the caller but never appended.

Axis order: actions store points in image order (x, y). A model trained on [y, x] sees its history
in its own order, `GO y=430 x=612 depth=9m`: the labels keep the axes unambiguous and the order
matches what the model writes, so the history never shows it a point the other way round. Logs
and the ground station use the image-order form (`point_order="xy"`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from common.actions import Action, Finished, Go, Rotate, Think

HISTORY_LENGTH = 5
EMPTY_HISTORY = "(none yet --- this is the first step)"
RECENT_TAG = "  <- most recent"


def _num(value: float) -> str:
    """Short decimal: 9.0 -> '9', 2.46 -> '2.5', -30.0 -> '-30'."""
    text = f"{round(value, 1):.1f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def compact(action: Action, point_order: str = "xy") -> str:
    """One action in the compact history/log form."""
    if isinstance(action, Go):
        x, y = action.point
        axes = f"x={x} y={y}" if point_order == "xy" else f"y={y} x={x}"
        return f"GO {axes} depth={_num(action.depth_m)}m"
    if isinstance(action, Rotate):
        return f"ROTATE angle={_num(action.angle_deg)}deg"
    if isinstance(action, Think):
        return "THINK"
    if isinstance(action, Finished):
        return "FINISHED"
    raise TypeError(f"not an action: {action!r}")


def render_history(actions: Iterable[Action], point_order: str = "xy") -> str:
    """The `{history}` slot: the last 5 of `actions` (oldest first), or the first-step line."""
    recent = list(actions)[-HISTORY_LENGTH:]
    if not recent:
        return EMPTY_HISTORY
    lines = [f"{i}. {compact(a, point_order)}" for i, a in enumerate(recent, start=1)]
    lines[-1] += RECENT_TAG
    return "\n".join(lines)


@dataclass(frozen=True)
class HistoryEntry:
    """An executed action and, for visual history, the (already encoded) view it was chosen from."""

    action: Action
    view_jpeg: bytes | None = None


class ActionHistory:
    """The rolling window of executed actions of one drone (and their views when kept)."""

    def __init__(self, entries: Iterable[HistoryEntry] = ()) -> None:
        self._entries: deque[HistoryEntry] = deque(entries, maxlen=HISTORY_LENGTH)

    def append(self, action: Action, view_jpeg: bytes | None = None) -> None:
        self._entries.append(HistoryEntry(action, view_jpeg))

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[HistoryEntry]:
        return iter(self._entries)

    @property
    def actions(self) -> list[Action]:
        return [e.action for e in self._entries]

    @property
    def last_action(self) -> Action | None:
        return self._entries[-1].action if self._entries else None

    def render(self, point_order: str = "xy") -> str:
        return render_history(self.actions, point_order)
