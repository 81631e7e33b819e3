"""Finding a named target in one frame: HSV colour segmentation, then silhouette and size cues.

A candidate is a connected region of the named colour. It is kept when its silhouette fits the
class: bounding-box aspect (the class's horizontal extent over its height), fill (region area over
box area) and a size that makes sense (not a sliver, not sky or ground spanning the frame). Depth
comes from the pinhole relation d = f·H_real / h_px on the box height, the one cue that does not
change with the object's heading. Regions cut by the image border are kept with the cues that
still apply (a cut edge only shortens that side).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from common.camera import CameraProfile
from common.pose import LEVEL_CAMERA, CameraAttitude
from models.baseline.classes import OBJECT_CLASSES, ObjectClass
from models.baseline.colours import COLOURS, colour_mask
from models.baseline.instruction import TargetSpec

WORK_WIDTH_PX = 640  # segmentation resolution: the model's frame width; a few ms per colour
MIN_AREA_PX = 12  # in full-image pixels at 640 wide; below this a silhouette carries no shape
MIN_DEPTH_M = 1.5  # nothing real is closer: the controller stops the drone 1-2 m short (outdoors)
MAX_DEPTH_M = 60.0  # beyond this a vehicle is a few pixels tall: a blob, not a silhouette
ALTITUDE_RANGE_M = (0.3, 6.0)  # the camera heights a low-flying drone pilot is used at
MAX_SPAN = 0.85  # an achromatic region wider or taller than this share of the frame is background
ACHROMATIC = frozenset({"white", "gray", "black"})
CUT_MIN_FILL_ACHROMATIC = 0.5
# Classes whose merged regions are split by ground contact: road vehicles, which park in rows and
# hide behind each other; splitting smaller classes' targets would turn parts of a same-colour
# vehicle into person- or cone-sized candidates.
SPLIT_CLASSES = frozenset({"car", "suv", "van", "truck", "bus"})
ACHROMATIC_BAND = 40  # brightness band width that splits achromatic masks into flat faces


@dataclass(frozen=True)
class Detection:
    """One candidate in full-image pixels."""

    x_px: int
    y_px: int
    w_px: int
    h_px: int
    area_px: float
    point_px: tuple[float, float]  # a pixel inside the region, near its centre
    depth_m: float
    score: float
    colour: str
    cut_left: bool = False
    cut_right: bool = False
    cut_top: bool = False
    cut_bottom: bool = False
    aspect: float = 0.0  # metric width/height of the silhouette
    aspect_range: tuple[float, float] = (0.0, 0.0)  # what the class allows from this viewpoint
    fill: float = 0.0
    altitude_m: float | None = None  # the camera altitude this candidate implies (ground classes)

    @property
    def cut(self) -> bool:
        return self.cut_left or self.cut_right or self.cut_top or self.cut_bottom

    @property
    def bottom_px(self) -> int:
        return self.y_px + self.h_px

    def contains(self, x_px: float, y_px: float) -> bool:
        return self.x_px <= x_px < self.x_px + self.w_px and self.y_px <= y_px < self.y_px + self.h_px


@dataclass(frozen=True)
class Rejection:
    """Why a region of the right colour was not taken (for logs and tests)."""

    x_px: int
    y_px: int
    w_px: int
    h_px: int
    reason: str


class Detector:
    def __init__(
        self,
        camera: CameraProfile | None = None,
        work_width_px: int = WORK_WIDTH_PX,
        altitude_range_m: tuple[float, float] | None = ALTITUDE_RANGE_M,
        min_depth_m: float = MIN_DEPTH_M,
    ) -> None:
        self.min_depth_m = min_depth_m
        self.camera = camera
        self.work_width_px = work_width_px
        self.altitude_range_m = altitude_range_m
        # How the camera pointed (a body-fixed camera pitched by the drone's acceleration): the
        # elevation and altitude geometry below is the level camera's turned by it.
        self.camera_attitude: CameraAttitude = LEVEL_CAMERA
        self.last_rejections: list[Rejection] = []

    def detect(self, image_bgr: np.ndarray, target: TargetSpec) -> list[Detection]:
        """Candidates for `target`, best first (empty when none fits)."""
        import cv2

        height, width = image_bgr.shape[:2]
        camera = self._camera_for(width, height)
        # With no colour named every colour is segmented: half the resolution keeps it fast.
        work_width = self.work_width_px if target.colour else self.work_width_px // 2
        scale = min(1.0, work_width / width)
        small = (
            image_bgr
            if scale == 1.0
            else cv2.resize(
                image_bgr, (round(width * scale), round(height * scale)), interpolation=cv2.INTER_AREA
            )
        )
        hsv = cv2.cvtColor(small, cv2.COLOR_BGR2HSV)
        colours = [target.colour] if target.colour else [c for c in COLOURS if c not in ("gray", "white")]
        cls = OBJECT_CLASSES[target.object_class]
        self.last_rejections = []
        found: list[Detection] = []
        for colour in colours:
            for mask in self._masks(hsv, colour):
                # Closing joins a silhouette split by thin edges or shading seams; opening drops speckle.
                mask = cv2.morphologyEx(mask, cv2.MORPH_CLOSE, np.ones((3, 3), np.uint8))
                mask = cv2.morphologyEx(mask, cv2.MORPH_OPEN, np.ones((2, 2), np.uint8))
                count, labels, stats, _ = cv2.connectedComponentsWithStats(mask, connectivity=8)
                for label in range(1, count):
                    parts = []
                    if colour not in ACHROMATIC and cls.name in SPLIT_CLASSES:
                        parts = split_by_ground_contact(labels, stats[label], label)
                    # The parts of a split region first; the whole when no part fits the class (a
                    # single vehicle whose ground line a wheel or an occluder breaks).
                    dets = [
                        self._candidate(
                            part_labels, part_stat, label, scale, camera, cls, colour, small.shape
                        )
                        for part_labels, part_stat in parts
                    ]
                    kept = [d for d in dets if d is not None]
                    if not kept:
                        whole = self._candidate(
                            labels, stats[label], label, scale, camera, cls, colour, small.shape
                        )
                        kept = [whole] if whole is not None else []
                    found.extend(kept)
        found.sort(key=lambda d: d.score, reverse=True)
        return found

    @staticmethod
    def _masks(hsv: np.ndarray, colour: str) -> list[np.ndarray]:
        """The colour's mask; achromatic colours split by brightness band, so that a grey car does
        not merge with the pavement around it (a hue cannot tell them apart, a shade can)."""
        import cv2

        mask = colour_mask(hsv, colour)
        if colour not in ACHROMATIC or not mask.any():
            return [mask]
        value = hsv[:, :, 2]
        masks = []
        for lo in range(0, 256, ACHROMATIC_BAND // 2):  # overlapping bands: no edge splits a flat face
            band = cv2.inRange(value, lo, min(255, lo + ACHROMATIC_BAND - 1))
            sub = cv2.bitwise_and(mask, band)
            if cv2.countNonZero(sub) >= MIN_AREA_PX:
                masks.append(sub)
        return masks

    def _camera_for(self, width: int, height: int) -> CameraProfile:
        if self.camera is None:
            return CameraProfile.from_hfov("assumed", width, height, 90.0)
        if (self.camera.width_px, self.camera.height_px) != (width, height):
            return self.camera.scaled_to(width, height)
        return self.camera

    def _candidate(
        self,
        labels: np.ndarray,
        stat: np.ndarray,
        label: int,
        scale: float,
        camera: CameraProfile,
        cls: ObjectClass,
        colour: str,
        shape: tuple[int, ...],
    ) -> Detection | None:
        x, y, w, h, area = (int(v) for v in stat)
        sh, sw = shape[:2]
        full = (round(x / scale), round(y / scale), round(w / scale), round(h / scale))

        def reject(reason: str) -> None:
            self.last_rejections.append(Rejection(*full, reason=f"{colour}: {reason}"))

        if area < MIN_AREA_PX * scale * scale:
            return None
        if colour in ACHROMATIC and (w > MAX_SPAN * sw or h > MAX_SPAN * sh):
            # Sky, ground, walls and roads are white, grey or black; saturated colours this large
            # are the target right in front of the camera.
            reject(f"spans {w}x{h} of {sw}x{sh}: background")
            return None
        cut_left, cut_top = x <= 0, y <= 0
        cut_right, cut_bottom = x + w >= sw, y + h >= sh
        width_cut, height_cut = cut_left or cut_right, cut_top or cut_bottom
        fx, fy = camera.fx_px * scale, camera.fy_px * scale
        cx, cy = camera.cx_px * scale, camera.cy_px * scale
        tan_below = ((y + 0.5 * h) - cy) / fy
        att = self.camera_attitude
        if not att.level:  # the box centre's elevation below the horizon, not below the optical axis
            forward, _, down = att.to_heading_frame(1.0, ((x + 0.5 * w) - cx) / fx, tan_below)
            tan_below = down / forward if forward > 1e-6 else math.inf
        aspect = (w / fx) / (h / fy)  # metric width over height at equal depth
        lo, hi = cls.aspect_range(tan_below)
        # A cut side only shrinks that dimension: check only the bound the cut cannot explain.
        if aspect < lo and not width_cut:
            reject(f"aspect {aspect:.2f} < {lo:.2f} for {cls.name}")
            return None
        if aspect > hi and not height_cut:
            reject(f"aspect {aspect:.2f} > {hi:.2f} for {cls.name}")
            return None
        fill = area / float(w * h)
        if not (width_cut or height_cut) and not cls.fill[0] <= fill <= cls.fill[1]:
            reject(f"fill {fill:.2f} outside {cls.fill[0]:.2f}-{cls.fill[1]:.2f} for {cls.name}")
            return None
        # The visible part of a solid object cut by the border is still solid; wedges of kerb,
        # road or pavement running out of the frame are not.
        min_cut_fill = max(cls.fill[0], CUT_MIN_FILL_ACHROMATIC if colour in ACHROMATIC else 0.0)
        if (width_cut or height_cut) and fill < min_cut_fill:
            reject(f"cut by the border with fill {fill:.2f} < {min_cut_fill:.2f}: not a solid {cls.name}")
            return None
        if not height_cut:
            depth_m = fy * cls.apparent_height_m(tan_below, aspect) / h
        else:
            # Height cut by the border: the width with the class's typical extent gives one estimate
            # (the heading is unknown), the visible height an upper bound; take their geometric mean.
            depth_m = fx * cls.nominal_extent_m / w
            if not width_cut:
                depth_m = math.sqrt(depth_m * max(depth_m, fy * cls.apparent_height_m(tan_below, aspect) / h))
        if cut_left and cut_right:
            # Wider than the view: right in front of the camera (the closest it can tell).
            depth_m = self.min_depth_m
        # Even at its widest, an object of this class showing this wide would be this close:
        if not width_cut:
            farthest_m = fx * cls.extent_m[1] / w
            if farthest_m < self.min_depth_m:
                reject(f"as a {cls.name} it would be at most {farthest_m:.2f} m away: too wide")
                return None
        if not self.min_depth_m <= depth_m <= MAX_DEPTH_M:
            reject(
                f"as a {cls.name} it would be {depth_m:.2f} m away,"
                f" outside {self.min_depth_m}-{MAX_DEPTH_M} m"
            )
            return None
        altitude_m = None
        if cls.bottom_m is not None and not cut_bottom and self.altitude_range_m is not None:
            # Standing on the ground at this depth, the silhouette's bottom row puts the camera at
            # this altitude: a same-colour object of another size implies an implausible one.
            drop_m = ((y + h) - cy) * depth_m / fy
            if not att.level:  # the bottom row's point at that planar depth, below a tilted camera
                lateral_m = ((x + 0.5 * w) - cx) * depth_m / fx
                drop_m = att.to_heading_frame(depth_m, lateral_m, drop_m)[2]
            altitude_m = cls.bottom_m + drop_m
            low, high = self.altitude_range_m
            if not low <= altitude_m <= high:
                reject(f"as a {cls.name} it puts the camera at {altitude_m:.1f} m, outside {low}-{high} m")
                return None
        # The point: the region pixel nearest the box centre, so it always lies on the target.
        region = labels[y : y + h, x : x + w] == label
        ys, xs = np.nonzero(region)
        mx, my = xs.mean(), ys.mean()
        nearest = int(np.argmin((xs - mx) ** 2 + (ys - my) ** 2))
        px, py = (xs[nearest] + x + 0.5) / scale, (ys[nearest] + y + 0.5) / scale
        # Score: typical silhouette and size; larger regions are likelier real (and closer).
        mid = math.sqrt(lo * hi)
        shape_fit = 1.0 / (1.0 + abs(math.log(max(aspect, 1e-3) / mid)))
        score = shape_fit * math.log1p(area / (scale * scale)) * (0.6 + 0.4 * min(fill, 1.0))
        return Detection(
            *full,
            area_px=area / (scale * scale),
            point_px=(float(px), float(py)),
            depth_m=float(depth_m),
            score=float(score),
            colour=colour,
            cut_left=cut_left,
            cut_right=cut_right,
            cut_top=cut_top,
            cut_bottom=cut_bottom,
            aspect=aspect,
            aspect_range=(lo, hi),
            fill=fill,
            altitude_m=altitude_m,
        )


def split_by_ground_contact(
    labels: np.ndarray, stat: np.ndarray, label: int, min_width_px: int = 3
) -> list[tuple[np.ndarray, np.ndarray]]:
    """A region's column runs that stand on different ground rows, as separate regions; [] if none.

    Two same-colour objects at different depths that overlap in the image merge into one region
    (a car in front of a van). Each stands on the ground, so their lowest rows differ by a step,
    while one object's lowest row changes smoothly along it (a cabin step changes its top, not its
    bottom). Each part comes with a labels array holding only its columns and its own stats row.
    """
    x, y, w, h, _ = (int(v) for v in stat)
    if w < 2 * min_width_px or h < 6:
        return []
    region = labels[y : y + h, x : x + w] == label
    has = region.any(axis=0)
    # Lowest row of each column (index from the top of the box); empty columns carry the last value.
    bottoms = np.where(has, h - 1 - np.argmax(region[::-1, :], axis=0), -1)
    jump_px = max(3, round(0.12 * h))
    # Compared over a few columns: JPEG and the morphology smear a step over 2-3 columns.
    span = 3
    columns = [c for c in range(w) if bottoms[c] >= 0]
    cuts = [0]
    index = span
    while index < len(columns):
        here, back = columns[index], columns[index - span]
        if abs(int(bottoms[here]) - int(bottoms[back])) > jump_px:
            steps = [
                abs(int(bottoms[columns[k]]) - int(bottoms[columns[k - 1]]))
                for k in range(index - span + 1, index + 1)
            ]
            cuts.append(columns[index - span + 1 + int(np.argmax(steps))])
            index += span
            continue
        index += 1
    if len(cuts) == 1:
        return []
    cuts.append(w)
    parts = []
    for start, end in itertools.pairwise(cuts):
        if end - start < min_width_px:
            continue
        sub = np.zeros_like(labels)
        piece = region[:, start:end].copy()
        sub[y : y + h, x + start : x + end][piece] = label
        rows = np.nonzero(piece.any(axis=1))[0]
        cols = np.nonzero(piece.any(axis=0))[0]
        if len(rows) == 0:
            continue
        # The columns next to the cut may still hold the other object above this one (the van's
        # side above the car's bonnet): the top is where most columns start, not the highest pixel.
        tops = np.argmax(piece[:, cols], axis=0)
        top = max(int(rows[0]), int(np.percentile(tops, 10)))
        piece[:top, :] = False
        sub[y : y + top, x + start : x + end] = 0
        rows = np.nonzero(piece.any(axis=1))[0]
        cols = np.nonzero(piece.any(axis=0))[0]
        if len(rows) == 0 or len(cols) < min_width_px:
            continue
        part_stat = np.array(
            [
                x + start + cols[0],
                y + rows[0],
                cols[-1] - cols[0] + 1,
                rows[-1] - rows[0] + 1,
                int(piece.sum()),
            ]
        )
        parts.append((sub, part_stat))
    return parts if len(parts) > 1 else []
