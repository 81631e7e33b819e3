"""Weather in the Scene image: AirSim's weather parameters drawn over a finished frame.

AirSim's weather (Unreal's WeatherLib, driven by simEnableWeather and simSetWeatherParameter) is a set
of scalars 0..1: Rain, Roadwetness, Snow, RoadSnow, MapleLeaf, RoadLeaf, Dust, Fog. Here each is an
image operation on the frame both renderers make, after the sky and ground fill (the ground and sky
are painted on the CPU after the draw, so a fog in the OpenGL shader alone would leave them clear):

- Fog, Dust, and the haze of Rain and Snow: Koschmieder's law per pixel, transmittance
  t = exp(-k d) over the distance d along the pixel's ray (from the planar depth), blended towards the
  medium's colour: pixel = t x pixel + (1 - t) x colour. k = 3.912 / visibility; at 1 the visibility
  is FOG_VISIBILITY_M for fog, DUST_VISIBILITY_M for dust (a brown haze), RAIN_VISIBILITY_M for rain and
  SNOW_VISIBILITY_M for snow; the sky (no surface, at the far plane) takes the medium's colour.
- Rain also darkens the frame (an overcast sky: x (1 - RAIN_DARKENING x rain)) and draws streaks,
  Snow draws flakes and MapleLeaf falling leaves, their count in proportion to the value.
- Roadwetness darkens the ground, RoadSnow whitens it, RoadLeaf tints it with leaves.

Streaks, flakes and leaves are placed by a generator seeded from the frame's simulation time and size,
so a lock-step run draws the same frames every time. With no weather the frame is not touched.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, fields

import cv2
import numpy as np

from common.camera import CameraProfile
from sim_bridge.sim.ground import GROUND_SEG_ID

# AirSim's WorldSimApiBase::WeatherParameter, by value (8, Enabled, switches the weather itself)
PARAMETERS = ("Rain", "Roadwetness", "Snow", "RoadSnow", "MapleLeaf", "RoadLeaf", "Dust", "Fog", "Enabled")
ENABLED_INDEX = 8
FOG_VISIBILITY_M = 20.0  # at Fog 1: 5% contrast left at this distance
DUST_VISIBILITY_M = 40.0
RAIN_VISIBILITY_M = 150.0
SNOW_VISIBILITY_M = 80.0
KOSCHMIEDER = 3.912  # -ln(0.02): the distance at which 2% contrast is left
FOG_BGR = (205.0, 205.0, 200.0)
DUST_BGR = (120.0, 165.0, 200.0)
SNOW_BGR = (235.0, 235.0, 235.0)
RAIN_DARKENING = 0.3
RAIN_STREAKS_PER_PX = 1.5e-3  # at Rain 1: about 350 streaks on a 640x360 frame
RAIN_BGR = (215.0, 210.0, 200.0)
RAIN_ALPHA = 0.45
RAIN_SLANT_RAD = math.radians(8.0)
SNOW_FLAKES_PER_PX = 2.5e-3
LEAVES_PER_PX = 2.5e-4
LEAF_BGR = ((30, 70, 200), (20, 110, 220), (40, 50, 150))
WET_DARKENING = 0.45
GROUND_SNOW_BGR = (245.0, 245.0, 240.0)
GROUND_LEAF_BGR = (35.0, 90.0, 165.0)


@dataclass(frozen=True)
class Weather:
    """The weather parameters' values, 0..1 each (AirSim's names, lower case)."""

    rain: float = 0.0
    roadwetness: float = 0.0
    snow: float = 0.0
    roadsnow: float = 0.0
    mapleleaf: float = 0.0
    roadleaf: float = 0.0
    dust: float = 0.0
    fog: float = 0.0

    @classmethod
    def from_values(cls, values: dict[str, float]) -> Weather:
        """From {AirSim parameter name: value}; names not drawn (Enabled) are ignored."""
        names = {f.name for f in fields(cls)}
        return cls(**{k.lower(): float(v) for k, v in values.items() if k.lower() in names})

    @property
    def visible(self) -> bool:
        return any(getattr(self, f.name) > 0.0 for f in fields(self))

    def extinction(self) -> tuple[float, np.ndarray]:
        """(k in 1/m, the medium's BGR colour) of fog, dust, rain and snow together."""
        parts = [
            (self.fog * KOSCHMIEDER / FOG_VISIBILITY_M, FOG_BGR),
            (self.dust * KOSCHMIEDER / DUST_VISIBILITY_M, DUST_BGR),
            (self.rain * KOSCHMIEDER / RAIN_VISIBILITY_M, FOG_BGR),
            (self.snow * KOSCHMIEDER / SNOW_VISIBILITY_M, SNOW_BGR),
        ]
        k = sum(p[0] for p in parts)
        if k <= 0.0:
            return 0.0, np.zeros(3, np.float32)
        colour = sum(np.asarray(c, np.float64) * kk for kk, c in parts) / k
        return k, np.asarray(colour, np.float32)

    @property
    def needs_depth(self) -> bool:
        return self.extinction()[0] > 0.0


@functools.lru_cache(maxsize=16)
def _ray_lengths(w: int, h: int, fx: float, fy: float, cx: float, cy: float) -> np.ndarray:
    """Distance along each pixel's ray per metre of planar depth, (H, W) float32."""
    u = (np.arange(w) - cx) / fx
    v = (np.arange(h) - cy) / fy
    return np.sqrt(1.0 + u[None, :] ** 2 + v[:, None] ** 2).astype(np.float32)


def apply_weather(
    image_bgr: np.ndarray,
    seg: np.ndarray | None,
    depth_planar_m: np.ndarray | None,
    cam: CameraProfile,
    weather: Weather,
    time_s: float,
) -> np.ndarray:
    """The frame with the weather drawn (a new array; `image_bgr` is left as it was). Whole-frame
    steps are single OpenCV calls on the uint8 frame; particles touch only their pixels."""
    img: np.ndarray = np.array(image_bgr, np.uint8, copy=True)
    h, w = img.shape[:2]
    if seg is not None:
        _ground(img, seg == GROUND_SEG_ID, weather)
    k, colour = weather.extinction()
    if k > 0.0:
        if depth_planar_m is None:
            raise ValueError("weather with a haze needs the frame's depth")
        ray = _ray_lengths(w, h, cam.fx_px, cam.fy_px, cam.cx_px, cam.cy_px)
        t = cv2.exp(np.multiply(depth_planar_m, ray, dtype=np.float32) * np.float32(-k))
        medium = np.empty_like(img)
        medium[:] = np.rint(colour).astype(np.uint8)
        img = cv2.blendLinear(img, medium, t, 1.0 - t)
    if weather.rain > 0.0:  # an overcast sky: the whole frame, haze included
        img = cv2.convertScaleAbs(img, alpha=1.0 - RAIN_DARKENING * weather.rain)
    rng = np.random.default_rng([round(time_s * 1e9) & 0xFFFFFFFF, w, h])
    scale = h / 360.0
    if weather.rain > 0.0:
        _streaks(img, rng, int(weather.rain * RAIN_STREAKS_PER_PX * w * h), scale)
    if weather.snow > 0.0:
        _flakes(img, rng, int(weather.snow * SNOW_FLAKES_PER_PX * w * h), scale)
    if weather.mapleleaf > 0.0:
        _leaves(img, rng, int(weather.mapleleaf * LEAVES_PER_PX * w * h), scale)
    return img


def _ground(img: np.ndarray, ground: np.ndarray, weather: Weather) -> None:
    if not (weather.roadwetness or weather.roadsnow or weather.roadleaf) or not ground.any():
        return
    out = img
    if weather.roadwetness:
        out = cv2.convertScaleAbs(out, alpha=1.0 - WET_DARKENING * weather.roadwetness)
    for value, share, colour in (
        (weather.roadleaf, 0.6, GROUND_LEAF_BGR),
        (weather.roadsnow, 0.85, GROUND_SNOW_BGR),
    ):
        if value:
            cover = np.empty_like(img)
            cover[:] = np.asarray(colour, np.uint8)
            out = cv2.addWeighted(out, 1.0 - share * value, cover, share * value, 0.0)
    np.copyto(img, out, where=ground[..., None])


def _blend(img: np.ndarray, mask: np.ndarray, colour: tuple[float, ...], alpha: float) -> None:
    hit = np.nonzero(mask)  # the particles cover a few per cent of the frame: blend just those pixels
    a = (mask[hit].astype(np.float32) * (alpha / 255.0))[:, None]
    mixed = img[hit].astype(np.float32) * (1.0 - a) + np.asarray(colour, np.float32) * a
    img[hit] = np.clip(np.rint(mixed), 0, 255).astype(np.uint8)


def _streaks(img: np.ndarray, rng: np.random.Generator, n: int, scale: float) -> None:
    h, w = img.shape[:2]
    mask = np.zeros((h, w), np.uint8)
    x0 = rng.uniform(0, w, n)
    y0 = rng.uniform(-20 * scale, h, n)
    length = rng.uniform(15, 45, n) * scale
    dx, dy = length * math.sin(RAIN_SLANT_RAD), length * math.cos(RAIN_SLANT_RAD)
    ends = np.stack([np.stack([x0, y0], -1), np.stack([x0 + dx, y0 + dy], -1)], 1).astype(np.int32)
    cv2.polylines(mask, list(ends), False, 255, 1, cv2.LINE_AA)  # one call draws them all
    _blend(img, mask, RAIN_BGR, RAIN_ALPHA)


def _flakes(img: np.ndarray, rng: np.random.Generator, n: int, scale: float) -> None:
    h, w = img.shape[:2]
    mask = np.zeros((h, w), np.uint8)
    xs, ys = rng.uniform(0, w, n).astype(int), rng.uniform(0, h, n).astype(int)
    radii = np.maximum(1, (rng.uniform(0.6, 2.6, n) * scale).astype(int))
    for x, y, r in zip(xs.tolist(), ys.tolist(), radii.tolist(), strict=True):
        cv2.circle(mask, (x, y), r, 255, -1, cv2.LINE_AA)
    _blend(img, mask, SNOW_BGR, 0.9)


def _leaves(img: np.ndarray, rng: np.random.Generator, n: int, scale: float) -> None:
    h, w = img.shape[:2]
    for _ in range(n):
        centre = (int(rng.uniform(0, w)), int(rng.uniform(0, h)))
        axes = (max(2, int(rng.uniform(3, 7) * scale)), max(1, int(rng.uniform(1.5, 3.5) * scale)))
        colour = LEAF_BGR[int(rng.integers(len(LEAF_BGR)))]
        cv2.ellipse(img, centre, axes, float(rng.uniform(0, 180)), 0, 360, colour, -1, cv2.LINE_AA)
