"""Offline tiles under the map: tiles this test generates (a checkerboard of two colours, Web
Mercator, zoom 21 around the simulator's geographic origin), as a Z/X/Y folder and as an MBTiles
file, are drawn where they belong: every sampled map pixel has the colour of the tile that covers
that point's latitude/longitude. And a bad tile path is one line before anything is launched."""

from __future__ import annotations

import os
import sqlite3

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest

from common.pose import Pose
from ground_station.app.map_tiles import tile_corner, tile_xy
from ground_station.fleet.launch import SIM_GEO_ORIGIN
from tests.support.processes import run_dronecats, subprocess_env

ZOOM = 21  # tiles about 13 m wide here: several in a 23 m view
COLOURS = ("#3366cc", "#cc9933")


def tile_png(colour: str) -> bytes:
    from PyQt6.QtCore import QBuffer, QIODevice
    from PyQt6.QtGui import QColor, QImage

    image = QImage(256, 256, QImage.Format.Format_RGB32)
    image.fill(QColor(colour))
    buffer = QBuffer()
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    image.save(buffer, "PNG")
    return bytes(buffer.data())


def tiles_around_origin() -> dict[tuple[int, int], str]:
    x, y = (int(v) for v in tile_xy(SIM_GEO_ORIGIN[0], SIM_GEO_ORIGIN[1], ZOOM))
    return {(tx, ty): COLOURS[(tx + ty) % 2] for tx in range(x - 3, x + 4) for ty in range(y - 3, y + 4)}


def write_xyz(root) -> None:
    for (tx, ty), colour in tiles_around_origin().items():
        folder = root / str(ZOOM) / str(tx)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{ty}.png").write_bytes(tile_png(colour))


def write_mbtiles(path) -> None:
    db = sqlite3.connect(path)
    db.execute(
        "CREATE TABLE tiles (zoom_level INTEGER, tile_column INTEGER, tile_row INTEGER, tile_data BLOB)"
    )
    for (tx, ty), colour in tiles_around_origin().items():
        row = (1 << ZOOM) - 1 - ty  # TMS: rows from the south
        db.execute("INSERT INTO tiles VALUES (?, ?, ?, ?)", (ZOOM, tx, row, tile_png(colour)))
    db.commit()
    db.close()


def test_tile_coordinates_round_trip() -> None:
    lat, lon = 47.6415, -122.1402
    x, y = tile_xy(lat, lon, ZOOM)
    assert tile_corner(x, y, ZOOM) == pytest.approx((lat, lon), abs=1e-9)


@pytest.mark.parametrize("kind", ["xyz", "mbtiles"])
def test_tiles_are_drawn_where_they_belong(qtbot, tmp_path, kind) -> None:
    from PyQt6.QtGui import QColor

    from ground_station.app.map_tiles import TileSource
    from ground_station.app.map_view import MapView

    if kind == "xyz":
        write_xyz(tmp_path / "tiles")
        source = TileSource(tmp_path / "tiles")
    else:
        write_mbtiles(tmp_path / "field.mbtiles")
        source = TileSource(tmp_path / "field.mbtiles")
    assert source.zooms == [ZOOM]
    view = MapView()
    qtbot.addWidget(view)
    view.resize(500, 500)
    view.geo_origin = SIM_GEO_ORIGIN
    view.tiles = source
    view.set_drone("Drone1", Pose(0.0, 0.0, -2.0, 0.0), [], False)
    view.show()
    image = view.grab().toImage()
    checked = 0
    # beside and behind the drone, off its field-of-view wedge (it faces north), off the grid lines
    points = ((1.3, -9.6), (2.4, -10.3), (0.7, 10.9), (-2.1, 6.6), (4.3, -10.8), (3.1, 11.2), (-3.3, 8.2))
    for x_m, y_m in points:
        screen = view.to_screen(x_m, y_m)
        on_legend = screen.x() < 350 and screen.y() > 430
        if not (0 <= screen.x() < 500 and 0 <= screen.y() < 478) or on_legend:
            continue
        lat, lon = view.to_geo(x_m, y_m)
        tx, ty = (int(v) for v in tile_xy(lat, lon, ZOOM))
        expected = QColor(tiles_around_origin()[(tx, ty)])
        assert image.pixelColor(int(screen.x()), int(screen.y())) == expected, (x_m, y_m, tx, ty)
        checked += 1
    assert checked >= 5
    assert (
        len(
            {
                image.pixelColor(int(view.to_screen(*p).x()), int(view.to_screen(*p).y())).name()
                for p in points
            }
        )
        == 2
    )
    source.close()


def test_a_bad_tile_path_is_refused_before_anything_is_launched(tmp_path) -> None:
    result = run_dronecats(
        "gs",
        "--launch",
        "1",
        "--map-tiles",
        str(tmp_path / "nowhere"),
        "--log-dir",
        str(tmp_path / "r"),
        env=subprocess_env(QT_QPA_PLATFORM="offscreen"),
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.startswith("dronecats gs: map tiles "), result.stderr
    assert not (tmp_path / "r").exists()
