"""Offline map tiles under the control-tower map: a folder of XYZ tiles (`Z/X/Y.png` or `.jpg`, the
slippy-map layout) or an MBTiles file (SQLite, TMS rows), both Web Mercator, that the operator
provides. Nothing is downloaded. Placed with the map's geographic origin."""

from __future__ import annotations

import math
import sqlite3
from collections import OrderedDict
from pathlib import Path

from PyQt6.QtGui import QImage

from common.errors import ConfigError

TILE_PX = 256
EQUATOR_M_PER_PX_Z0 = 156543.03392  # Web Mercator ground resolution at zoom 0, on the equator
MAX_LAT_DEG = 85.05112878


def tile_xy(lat_deg: float, lon_deg: float, zoom: int) -> tuple[float, float]:
    """Fractional XYZ tile coordinates of a point (x east, y south from the north-west corner)."""
    n = 2.0**zoom
    lat = math.radians(max(-MAX_LAT_DEG, min(MAX_LAT_DEG, lat_deg)))
    x = (lon_deg + 180.0) / 360.0 * n
    y = (1.0 - math.asinh(math.tan(lat)) / math.pi) / 2.0 * n
    return x, y


def tile_corner(x: float, y: float, zoom: int) -> tuple[float, float]:
    """Latitude, longitude of XYZ tile coordinates (a tile's north-west corner for integers)."""
    n = 2.0**zoom
    lon = x / n * 360.0 - 180.0
    lat = math.degrees(math.atan(math.sinh(math.pi * (1.0 - 2.0 * y / n))))
    return lat, lon


class TileSource:
    """Tiles by (zoom, x, y), the last few hundred decoded kept in memory."""

    def __init__(self, path: str | Path, cache_tiles: int = 256) -> None:
        self.path = Path(path)
        self._db: sqlite3.Connection | None = None
        if self.path.is_dir():
            self.zooms = sorted(int(p.name) for p in self.path.iterdir() if p.is_dir() and p.name.isdigit())
        elif self.path.is_file() and self.path.suffix == ".mbtiles":
            try:
                self._db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, check_same_thread=False)
                rows = self._db.execute("SELECT DISTINCT zoom_level FROM tiles").fetchall()
            except sqlite3.Error as exc:
                raise ConfigError(f"map tiles {self.path}: not a readable MBTiles file ({exc})") from None
            self.zooms = sorted(int(r[0]) for r in rows)
        else:
            raise ConfigError(f"map tiles {self.path}: give a Z/X/Y tile folder or an .mbtiles file")
        if not self.zooms:
            raise ConfigError(f"map tiles {self.path}: no zoom levels found")
        self._cache: OrderedDict[tuple[int, int, int], QImage | None] = OrderedDict()
        self.cache_tiles = cache_tiles

    def zoom_for(self, metres_per_px: float, lat_deg: float) -> int:
        """The available zoom whose ground resolution is nearest the map's."""
        wanted = math.log2(max(1e-9, EQUATOR_M_PER_PX_Z0 * math.cos(math.radians(lat_deg)) / metres_per_px))
        return min(self.zooms, key=lambda z: abs(z - wanted))

    def get(self, zoom: int, x: int, y: int) -> QImage | None:
        key = (zoom, x, y)
        if key in self._cache:
            self._cache.move_to_end(key)
            return self._cache[key]
        image = self._load(zoom, x, y)
        self._cache[key] = image
        while len(self._cache) > self.cache_tiles:
            self._cache.popitem(last=False)
        return image

    def _load(self, zoom: int, x: int, y: int) -> QImage | None:
        if self._db is not None:
            row = self._db.execute(
                "SELECT tile_data FROM tiles WHERE zoom_level=? AND tile_column=? AND tile_row=?",
                (zoom, x, (1 << zoom) - 1 - y),  # MBTiles rows count from the south (TMS)
            ).fetchone()
            if row is None:
                return None
            image = QImage.fromData(bytes(row[0]))
            return None if image.isNull() else image
        for suffix in (".png", ".jpg", ".jpeg", ".webp"):
            path = self.path / str(zoom) / str(x) / f"{y}{suffix}"
            if path.exists():
                image = QImage(str(path))
                return None if image.isNull() else image
        return None

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
