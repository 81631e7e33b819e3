"""Physical size and silhouette priors per object class, for the baseline pilot's shape checks.

Each class is modelled by the box its coloured part fills: width W (across), length L (along its
heading) and height H, plus how far its bottom is above the ground. Seen from a heading θ and from
tan(elevation) t above it, the silhouette is W|cos θ| + L|sin θ| wide and H + (W|sin θ| + L|cos θ|)·t
tall (the side plus the projected top). Sweeping θ gives the aspects the class can show from that
elevation (a tight test, since width and depth extent trade off), and the heading that best fits
the measured aspect gives the metric height, hence the pinhole depth d = f·h_m / h_px.
`bottom_m` lets a ground-standing candidate imply the camera's altitude, a check on its absolute size.
"""

from __future__ import annotations

import math

import msgspec
import numpy as np

LOW_ASPECT_FACTOR = 1.0
_HEADINGS = np.radians(np.linspace(0.0, 90.0, 19))
_COS, _SIN = np.cos(_HEADINGS), np.sin(_HEADINGS)


class ObjectClass(msgspec.Struct, frozen=True):
    name: str
    size_m: tuple[float, float, float]  # coloured box: width, length, height
    fill: tuple[float, float] = (0.45, 1.0)
    bottom_m: float | None = 0.0  # lowest coloured point above the ground; None: flies or hangs
    tolerance: float = 0.2  # relative size variation within the class

    def _silhouettes(self, tan_below: float) -> tuple[np.ndarray, np.ndarray]:
        width, length, height = self.size_m
        t = max(tan_below, 0.0)
        widths = width * _COS + length * _SIN
        heights = height + (width * _SIN + length * _COS) * t
        return widths / heights, heights

    def aspect_range(self, tan_below: float = 0.0, slack: float = 1.15) -> tuple[float, float]:
        """Silhouette width/height (metric) the class can show from this elevation, widened by
        the class's size tolerance and `slack` (segmentation error) on the wide side only: the
        narrowest view (end-on, with the whole top in sight) is the model's extreme, and real
        silhouettes (rounded tops, cabins narrower than bodies) stay above it."""
        aspects, _ = self._silhouettes(tan_below)
        spread = (1.0 + self.tolerance) * slack
        return float(aspects.min()) * LOW_ASPECT_FACTOR, float(aspects.max()) * spread

    def apparent_height_m(self, tan_below: float, aspect: float | None = None) -> float:
        """Metric silhouette height for the heading whose aspect is nearest `aspect` (mean if None)."""
        aspects, heights = self._silhouettes(tan_below)
        if aspect is None:
            return float(heights.mean())
        index = int(np.argmin(np.abs(np.log(aspects / max(aspect, 1e-6)))))
        return float(heights[index])

    @property
    def extent_m(self) -> tuple[float, float]:
        """Narrowest and widest horizontal extent over all headings."""
        width, length, _ = self.size_m
        widest = max(width, length, math.hypot(width, length))
        return min(width, length), widest

    @property
    def nominal_extent_m(self) -> float:
        return math.sqrt(self.extent_m[0] * self.extent_m[1])


# Vehicles: the painted body (wheels, glass and chassis are not the named colour); people and
# cyclists: the garment that carries the colour (torso), since that is what colour segmentation sees.
OBJECT_CLASSES: dict[str, ObjectClass] = {
    c.name: c
    for c in (
        ObjectClass("car", (1.8, 4.4, 1.2), (0.35, 1.0), bottom_m=0.3),
        ObjectClass("suv", (1.95, 4.8, 1.45), (0.35, 1.0), bottom_m=0.4),
        ObjectClass("van", (2.0, 5.2, 1.9), (0.35, 1.0), bottom_m=0.35),
        ObjectClass("truck", (2.5, 7.3, 3.1), (0.35, 1.0), bottom_m=0.55),
        ObjectClass("bus", (2.5, 11.0, 2.9), (0.35, 1.0), bottom_m=0.4),
        ObjectClass("person", (0.46, 0.28, 0.6), (0.5, 1.0), bottom_m=0.85),
        ObjectClass("cyclist", (0.42, 0.42, 0.55), (0.5, 1.0), bottom_m=1.15),
        ObjectClass("drone", (0.22, 0.22, 0.1), (0.4, 1.0), bottom_m=None, tolerance=0.5),
        ObjectClass("cone", (0.4, 0.4, 0.7), (0.3, 0.8), tolerance=0.4),
        ObjectClass("box", (0.6, 0.6, 0.6), (0.65, 1.0), tolerance=0.8),
        ObjectClass("ball", (0.5, 0.5, 0.5), (0.6, 0.9), tolerance=0.8),
        ObjectClass("barrel", (0.6, 0.6, 0.9), (0.65, 1.0), tolerance=0.3),
        ObjectClass("umbrella", (1.8, 1.8, 1.2), (0.25, 0.9), bottom_m=None, tolerance=0.5),
        ObjectClass("tent", (2.5, 2.5, 1.6), (0.4, 1.0), tolerance=0.5),
        ObjectClass("bench", (0.6, 1.6, 0.8), (0.25, 1.0), tolerance=0.3),
        ObjectClass("sign", (0.05, 1.0, 0.35), (0.5, 1.0), bottom_m=None, tolerance=0.6),
    )
}
CLASS_SYNONYMS: dict[str, str] = {
    "automobile": "car",
    "sedan": "car",
    "hatchback": "car",
    "vehicle": "car",
    "jeep": "suv",
    "lorry": "truck",
    "pickup": "truck",
    "minivan": "van",
    "man": "person",
    "woman": "person",
    "pedestrian": "person",
    "human": "person",
    "people": "person",
    "walker": "person",
    "bicycle": "cyclist",
    "bike": "cyclist",
    "biker": "cyclist",
    "quadcopter": "drone",
    "uav": "drone",
    "traffic cone": "cone",
    "pylon": "cone",
    "crate": "box",
    "cube": "box",
    "package": "box",
    "sphere": "ball",
    "drum": "barrel",
    "parasol": "umbrella",
}
