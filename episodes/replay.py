"""Replay an episode from its logs: each saved frame with the action drawn on it.

`go`: the chosen point (ring + cross; green when it lay on the target, red when not, white when
unknown) and its depth; `rotate`: an arrow the way it turned; `finished`: a banner (gold when the
declaration qualified). A header line gives t, the action and the true distance/visibility.
No window is opened (headless machines have none): frames are composed into a contact sheet, a video
file, or handed to the caller one by one (the terminal --step mode).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from common.actions import Finished, Go, Rotate
from common.declarations import qualifies
from episodes.logs import StepLine, read_episode

GREEN, RED, WHITE, GOLD, BLACK = (60, 200, 60), (40, 40, 230), (240, 240, 240), (0, 200, 255), (0, 0, 0)


@dataclass
class ReplayStep:
    index: int
    step: StepLine
    image: np.ndarray  # annotated BGR
    caption: str


def _action_caption(step: StepLine) -> str:
    a = step.action
    if a is None:
        return "malformed/discarded (hold)"
    if isinstance(a, Go):
        return f"GO x={a.point[0]} y={a.point[1]} depth={a.depth_m:g}m"
    if isinstance(a, Rotate):
        return f"ROTATE {a.angle_deg:+g}deg"
    return type(a).__name__.upper()


def caption(step: StepLine) -> str:
    dist = "?" if step.distance_m is None else f"{step.distance_m:.1f} m"
    vis = {True: "visible", False: "not visible", None: "visibility ?"}[step.visible]
    return f"t={step.t:6.1f}s  {_action_caption(step):32s} target {dist}, {vis}"


def annotate(image: np.ndarray, step: StepLine, qualifying: bool = False) -> np.ndarray:
    out = image.copy()
    h, w = out.shape[:2]
    a = step.action
    if isinstance(a, Go):
        u, v = int(a.point[0] / 1000 * w), int(a.point[1] / 1000 * h)
        colour = {True: GREEN, False: RED, None: WHITE}[step.point_on_target]
        r = max(6, w // 60)
        cv2.circle(out, (u, v), r, BLACK, 3, cv2.LINE_AA)
        cv2.circle(out, (u, v), r, colour, 2, cv2.LINE_AA)
        cv2.line(out, (u - 2 * r, v), (u + 2 * r, v), colour, 1, cv2.LINE_AA)
        cv2.line(out, (u, v - 2 * r), (u, v + 2 * r), colour, 1, cv2.LINE_AA)
        font = cv2.FONT_HERSHEY_SIMPLEX
        cv2.putText(out, f"{a.depth_m:g} m", (u + r + 4, v - r), font, 0.45, colour, 1, cv2.LINE_AA)
    elif isinstance(a, Rotate):
        sign = 1 if a.angle_deg >= 0 else -1
        y, x0, x1 = h // 2, w // 2 - sign * w // 8, w // 2 + sign * w // 8
        cv2.arrowedLine(out, (x0, y), (x1, y), WHITE, 3, cv2.LINE_AA, tipLength=0.3)
    elif isinstance(a, Finished):
        cv2.rectangle(out, (0, h - 28), (w, h), GOLD if qualifying else WHITE, -1)
        label = "FINISHED (qualifying declaration)" if qualifying else "FINISHED (declaration)"
        cv2.putText(out, label, (8, h - 9), cv2.FONT_HERSHEY_SIMPLEX, 0.55, BLACK, 1, cv2.LINE_AA)
    cv2.rectangle(out, (0, 0), (w, 20), BLACK, -1)
    cv2.putText(out, caption(step), (4, 14), cv2.FONT_HERSHEY_SIMPLEX, 0.4, WHITE, 1, cv2.LINE_AA)
    return out


def replay_steps(directory: Path, drone: str | None = None) -> Iterator[ReplayStep]:
    """Annotated frames in time order (steps without a saved frame are skipped)."""
    logs = read_episode(directory)
    delta = logs.record.delta_m if logs.record else None
    qualifying_t = {
        round(d.t, 3) for d in logs.declarations if qualifies(d.distance_m, d.visible, delta, d.judged)
    }
    steps = sorted((s for s in logs.steps if drone is None or s.drone == drone), key=lambda s: s.t)
    for i, step in enumerate(steps):
        if not step.frame:
            continue
        image = cv2.imread(str(directory / step.frame))
        if image is None:
            continue
        qualifying = isinstance(step.action, Finished) and any(abs(step.t - t) < 5.0 for t in qualifying_t)
        yield ReplayStep(i, step, annotate(image, step, qualifying), caption(step))


def contact_sheet(frames: list[np.ndarray], columns: int = 5, thumb_width_px: int = 320) -> np.ndarray:
    if not frames:
        raise ValueError("no frames to put on a contact sheet")
    thumbs = []
    for f in frames:
        scale = thumb_width_px / f.shape[1]
        thumbs.append(
            cv2.resize(f, (thumb_width_px, int(f.shape[0] * scale + 0.5)), interpolation=cv2.INTER_AREA)
        )
    th = max(t.shape[0] for t in thumbs)
    rows = (len(thumbs) + columns - 1) // columns
    sheet = np.full((rows * (th + 4), columns * (thumb_width_px + 4), 3), 30, np.uint8)
    for k, t in enumerate(thumbs):
        r, c = divmod(k, columns)
        y, x = r * (th + 4), c * (thumb_width_px + 4)
        sheet[y : y + t.shape[0], x : x + t.shape[1]] = t
    return sheet


def pick(n_total: int, limit: int) -> list[int]:
    """Up to `limit` indices spread evenly over n_total, first and last included."""
    if n_total <= limit:
        return list(range(n_total))
    return sorted({round(i * (n_total - 1) / (limit - 1)) for i in range(limit)})


def write_video(frames: Iterator[np.ndarray], path: Path, fps: float = 4.0) -> int:
    writer = None
    count = 0
    try:
        for f in frames:
            if writer is None:
                codec = "MJPG" if path.suffix.lower() == ".avi" else "mp4v"
                fourcc = cv2.VideoWriter_fourcc(*codec)  # type: ignore[attr-defined]
                writer = cv2.VideoWriter(str(path), fourcc, fps, (f.shape[1], f.shape[0]))
                if not writer.isOpened():
                    raise OSError(f"OpenCV cannot write a video to {path}")
            writer.write(f)
            count += 1
    finally:
        if writer is not None:
            writer.release()
    return count
