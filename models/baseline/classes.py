"""Physical size and silhouette priors per object class, for the baseline pilot's shape checks.

`height_m` is the vertical extent (independent of the viewing angle, hence the depth cue);
`extent_m` is the horizontal extent seen from any side (front-on to broadside); `fill` bounds the
share of the bounding box the silhouette covers.
"""

from __future__ import annotations

import msgspec


class ObjectClass(msgspec.Struct, frozen=True):
    name: str
    height_m: tuple[float, float]  # plausible vertical extent (min, max)
    extent_m: tuple[float, float]  # plausible horizontal extent seen from any side (min, max)
    fill: tuple[float, float] = (0.45, 1.0)

    @property
    def nominal_height_m(self) -> float:
        return 0.5 * (self.height_m[0] + self.height_m[1])

    def aspect_range(self, slack: float = 1.3) -> tuple[float, float]:
        """Plausible bounding-box width/height (square pixels), widened by `slack` for segmentation."""
        return (self.extent_m[0] / self.height_m[1] / slack, self.extent_m[1] / self.height_m[0] * slack)


OBJECT_CLASSES: dict[str, ObjectClass] = {
    c.name: c
    for c in (
        ObjectClass("car", (1.2, 1.8), (1.6, 5.0), (0.5, 1.0)),
        ObjectClass("suv", (1.5, 2.0), (1.8, 5.2), (0.5, 1.0)),
        ObjectClass("van", (1.8, 2.6), (1.8, 6.0), (0.55, 1.0)),
        ObjectClass("truck", (2.4, 4.0), (2.3, 10.0), (0.5, 1.0)),
        ObjectClass("bus", (2.7, 3.6), (2.4, 12.5), (0.6, 1.0)),
        ObjectClass("person", (1.4, 1.95), (0.3, 0.8), (0.35, 0.95)),
        ObjectClass("cyclist", (1.4, 2.0), (0.5, 1.9), (0.3, 0.9)),
        ObjectClass("drone", (0.1, 0.5), (0.25, 1.2), (0.2, 1.0)),
        ObjectClass("cone", (0.4, 1.0), (0.25, 0.6), (0.3, 0.8)),
        ObjectClass("box", (0.2, 1.5), (0.2, 2.0), (0.65, 1.0)),
        ObjectClass("ball", (0.15, 1.2), (0.15, 1.2), (0.6, 0.9)),
        ObjectClass("barrel", (0.6, 1.2), (0.4, 0.8), (0.65, 1.0)),
        ObjectClass("umbrella", (0.8, 2.4), (0.8, 2.6), (0.25, 0.9)),
        ObjectClass("tent", (1.0, 2.5), (1.5, 4.0), (0.4, 1.0)),
        ObjectClass("bench", (0.4, 1.0), (0.5, 2.0), (0.25, 1.0)),
        ObjectClass("sign", (0.5, 3.0), (0.4, 2.0), (0.2, 1.0)),
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
