"""The control-tower map: a top-down view (north up) of the drones, their trails and fields of view,
their homes and geofence, the simulator's targets, the declarations, and the targets the operator
marks (left click: mark, right click: remove the nearest), and the GoTo targets sent to drones (while
`picking`, the next left click picks a GoTo point instead, handed to `on_pick` for confirmation).
Local metres (NED: x north, y east) and, given the geographic origin of that frame,
latitude/longitude (the pointer's and each drone's).
F toggles the view between the drones and the whole fence. A legend says what each mark means.
The commander structure can be given this map as an image (`render_bgr`)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from PyQt6.QtCore import QPointF, QRectF, Qt
from PyQt6.QtGui import QColor, QFont, QMouseEvent, QPainter, QPainterPath, QPen, QPolygonF
from PyQt6.QtWidgets import QSizePolicy, QWidget

from common.pose import Pose
from ground_station.fleet.geo import EARTH_RADIUS_M, geo_from_ned

DRONE_COLOURS = ["#1e88e5", "#e53935", "#43a047", "#fb8c00", "#8e24aa", "#00acc1", "#6d4c41", "#546e7a"]


def place_labels(anchors: list[QPointF], sizes: list[tuple[float, float]]) -> list[QRectF]:
    """A rectangle per label next to its anchor (a drone on the map), none overlapping another: each
    takes the first free spot of right-below, left-below, right-above, left-above, then the same a
    line further out, and so on. Drones close together (a fleet converging on one target) would
    otherwise print their names over each other."""
    placed: list[QRectF] = []
    for anchor, (width, height) in zip(anchors, sizes, strict=True):
        spots = [
            QRectF(
                anchor.x() + 10 if right else anchor.x() - 10 - width,
                anchor.y() + dy if below else anchor.y() - dy - height,
                width,
                height,
            )
            for dy in (6.0 + ring * height for ring in range(len(anchors) + 1))
            for right, below in ((True, True), (False, True), (True, False), (False, False))
        ]
        free = (r for r in spots if not any(r.intersects(other) for other in placed))
        placed.append(next(free, spots[-1]))  # none free: the outermost spot
    return placed


class MapView(QWidget):
    def __init__(
        self, hfov_deg: float = 90.0, on_marks: Callable[[list[tuple[float, float]]], None] | None = None
    ):
        super().__init__()
        self.setObjectName("map")
        self.setMinimumSize(220, 170)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self.hfov_deg = hfov_deg
        self.on_marks = on_marks
        self.drones: dict[str, tuple[Pose | None, list[tuple[float, float]], bool]] = {}
        self.marks: list[tuple[float, float]] = []
        self.declared: list[tuple[float, float, str]] = []  # x, y (NED m), drone
        self.colours: dict[str, str] = {}  # drone -> colour, shared with its tile
        self.homes: dict[str, tuple[float, float, float]] = {}  # drone -> home (NED m)
        self.fence_radius_m: float | None = None  # around each home; None: not known here
        self.targets: list[tuple[str, float, float]] = []  # the simulator's (name, x, y): ground truth
        self.geo_origin: tuple[float, float, float] | None = None  # lat, lon, alt of NED (0, 0, 0)
        self.fit_fence = False
        self._grid_m = 5.0
        self.tiles: Any = None  # a map_tiles.TileSource, drawn under the map when there is a geo origin
        self.pointer: tuple[float, float] | None = None
        self.picking = False  # the next left click picks a GoTo point (on_pick), not a mark
        self.on_pick: Callable[[tuple[float, float]], None] | None = None
        self.goto_targets: dict[str, tuple[float, float]] = {}  # drone -> its GoTo target (NED m)
        self.setMouseTracking(True)
        self.setFocusPolicy(Qt.FocusPolicy.ClickFocus)
        self._view: tuple[float, float, float] = (0.0, 0.0, 1.0)  # centre x, centre y (NED m), px per m

    def set_drone(
        self, drone_id: str, pose: Pose | None, trail: list[tuple[float, float]], stale: bool
    ) -> None:
        self.drones[drone_id] = (pose, trail, stale)

    def add_declaration(self, pose: Pose, drone: str = "") -> None:
        self.declared.append((pose.x_m, pose.y_m, drone))
        self.update()

    def to_geo(self, x_m: float, y_m: float) -> tuple[float, float] | None:
        """Latitude, longitude (degrees) of a local point; flat earth about the origin (fine over a
        few kilometres, the size of any field this map shows)."""
        if self.geo_origin is None:
            return None
        lat, lon, _ = geo_from_ned(x_m, y_m, 0.0, self.geo_origin)  # the one the GoTo is sent with
        return lat, lon

    def from_geo(self, lat_deg: float, lon_deg: float) -> tuple[float, float]:
        """The inverse of to_geo: local NED metres (x north, y east) of a geographic point."""
        assert self.geo_origin is not None
        lat0, lon0, _ = self.geo_origin
        x_m = math.radians(lat_deg - lat0) * EARTH_RADIUS_M
        y_m = math.radians(lon_deg - lon0) * EARTH_RADIUS_M * math.cos(math.radians(lat0))
        return x_m, y_m

    def _tiles(self, painter: QPainter) -> None:
        """The operator's offline tiles, under everything else (needs the geographic origin)."""
        if self.tiles is None or self.geo_origin is None:
            return
        from ground_station.app.map_tiles import tile_corner, tile_xy

        scale = self._view[2]
        lat0 = self.geo_origin[0]
        zoom = self.tiles.zoom_for(1.0 / scale, lat0)
        north_west = self.to_world(QPointF(0, 0))
        south_east = self.to_world(QPointF(self.width(), self.height()))
        nw = self.to_geo(*north_west)
        se = self.to_geo(*south_east)
        assert nw is not None and se is not None
        x0, y0 = tile_xy(nw[0], nw[1], zoom)
        x1, y1 = tile_xy(se[0], se[1], zoom)
        for tx in range(math.floor(x0), math.floor(x1) + 1):
            for ty in range(math.floor(y0), math.floor(y1) + 1):
                image = self.tiles.get(zoom, tx, ty)
                if image is None:
                    continue
                top_left = self.to_screen(*self.from_geo(*tile_corner(tx, ty, zoom)))
                bottom_right = self.to_screen(*self.from_geo(*tile_corner(tx + 1, ty + 1, zoom)))
                painter.drawImage(QRectF(top_left, bottom_right), image, QRectF(image.rect()))

    def geo_text(self, x_m: float, y_m: float) -> str:
        geo = self.to_geo(x_m, y_m)
        return f"{geo[0]:.6f}, {geo[1]:.6f}" if geo is not None else "no geo origin"

    def colour_of(self, drone_id: str, index: int) -> QColor:
        return QColor(self.colours.get(drone_id, DRONE_COLOURS[index % len(DRONE_COLOURS)]))

    # NED (x north, y east) -> screen (north up, east right)
    def _fit(self) -> None:
        points = [p for p in self.marks] + [(x, y) for x, y, _ in self.declared]
        points += [(x, y) for _, x, y in self.targets]
        for hx, hy, _ in self.homes.values():
            points.append((hx, hy))
            if self.fit_fence and self.fence_radius_m is not None:
                r = self.fence_radius_m
                points += [(hx - r, hy - r), (hx + r, hy + r)]
        for pose, trail, _ in self.drones.values():
            points += trail[-200:]
            if pose is not None:
                points.append((pose.x_m, pose.y_m))
                # keep the field-of-view wedge on the map
                for a in (pose.yaw_deg - self.hfov_deg / 2, pose.yaw_deg, pose.yaw_deg + self.hfov_deg / 2):
                    r = math.radians(a)
                    points.append((pose.x_m + 12.0 * math.cos(r), pose.y_m + 12.0 * math.sin(r)))
        if not points:
            points = [(0.0, 0.0)]
        xs, ys = [p[0] for p in points], [p[1] for p in points]
        span = max(max(xs) - min(xs), max(ys) - min(ys), 20.0) * 1.15
        scale = min(self.width(), self.height()) / span
        self._view = ((max(xs) + min(xs)) / 2, (max(ys) + min(ys)) / 2, scale)

    def to_screen(self, x_m: float, y_m: float) -> QPointF:
        cx, cy, scale = self._view
        return QPointF(self.width() / 2 + (y_m - cy) * scale, self.height() / 2 - (x_m - cx) * scale)

    def to_world(self, point: QPointF) -> tuple[float, float]:
        cx, cy, scale = self._view
        return (cx - (point.y() - self.height() / 2) / scale, cy + (point.x() - self.width() / 2) / scale)

    def paintEvent(self, event: object) -> None:  # noqa: N802 (Qt's name)
        self._fit()
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.fillRect(self.rect(), QColor("#f4f1e8"))
        self._tiles(painter)
        self._grid(painter)
        self._fence_and_homes(painter)
        labels: list[tuple[QPointF, str]] = []
        for index, (drone_id, (pose, trail, stale)) in enumerate(sorted(self.drones.items())):
            colour = self.colour_of(drone_id, index)
            if stale:
                colour = QColor("#9e9e9e")
            if len(trail) > 1:
                path = QPainterPath(self.to_screen(*trail[0]))
                for x_m, y_m in trail[1:]:
                    path.lineTo(self.to_screen(x_m, y_m))
                painter.setPen(QPen(colour, 1.5))
                painter.setBrush(Qt.BrushStyle.NoBrush)
                painter.drawPath(path)
            if pose is not None:
                self._drone(painter, pose, colour)
                home_z = self.homes.get(drone_id, (0.0, 0.0, 0.0))[2]
                labels.append(
                    (self.to_screen(pose.x_m, pose.y_m), f"{drone_id} alt {home_z - pose.z_m:.1f} m")
                )
        for name, x_m, y_m in self.targets:  # the simulator's own: ground truth, not the commander's
            p = self.to_screen(x_m, y_m)
            painter.setPen(QPen(QColor("#000000"), 1))
            painter.setBrush(QColor("#d32f2f"))
            painter.drawRect(QRectF(p.x() - 5, p.y() - 5, 10, 10))
            painter.setPen(QColor("#7f0000"))
            painter.drawText(QPointF(p.x() + 8, p.y() + 14), f"{name} (sim)")
        painter.setPen(QPen(QColor("#b71c1c"), 2))
        for x_m, y_m in self.marks:
            p = self.to_screen(x_m, y_m)
            painter.drawLine(QPointF(p.x() - 7, p.y() - 7), QPointF(p.x() + 7, p.y() + 7))
            painter.drawLine(QPointF(p.x() - 7, p.y() + 7), QPointF(p.x() + 7, p.y() - 7))
            painter.drawText(QPointF(p.x() + 9, p.y() - 6), f"target ({x_m:.0f}, {y_m:.0f})")
        for index, (drone, (x_m, y_m)) in enumerate(sorted(self.goto_targets.items())):
            p = self.to_screen(x_m, y_m)
            painter.setPen(QPen(self.colour_of(drone, index), 2))
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.drawEllipse(p, 8.0, 8.0)
            painter.drawLine(QPointF(p.x() - 11, p.y()), QPointF(p.x() + 11, p.y()))
            painter.drawLine(QPointF(p.x(), p.y() - 11), QPointF(p.x(), p.y() + 11))
            painter.drawText(QPointF(p.x() + 10, p.y() + 14), f"goto {drone}")
        for index, (x_m, y_m, drone) in enumerate(self.declared):
            painter.setPen(QPen(self.colour_of(drone, index) if drone else QColor("#2e7d32"), 2))
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.drawEllipse(self.to_screen(x_m, y_m), 5.0, 5.0)
        # drone labels last, on a pale backing: trails, marks and declaration rings stay under them
        metrics = painter.fontMetrics()
        sizes = [(float(metrics.horizontalAdvance(text)) + 4, float(metrics.height())) for _, text in labels]
        backing = QColor("#f4f1e8")
        backing.setAlpha(210)
        for rect, (_, text) in zip(place_labels([a for a, _ in labels], sizes), labels, strict=True):
            painter.fillRect(rect, backing)
            painter.setPen(QColor("#000000"))
            painter.drawText(rect, Qt.AlignmentFlag.AlignCenter, text)
        self._legend(painter)
        painter.setPen(QColor("#444444"))
        pointer = ""
        if self.pointer is not None:
            x_m, y_m = self.pointer
            pointer = f"pointer N {x_m:.1f} E {y_m:.1f} m · {self.geo_text(x_m, y_m)}   "
        painter.drawText(
            QRectF(6, self.height() - 20, self.width() - 12, 16),
            Qt.AlignmentFlag.AlignLeft,
            pointer + ("click the GoTo point (right click: cancel)" if self.picking else "")
            or "N ↑ · click: mark target · right click: remove · F: fit fence",
        )
        painter.end()

    def _fence_and_homes(self, painter: QPainter) -> None:
        scale = self._view[2]
        for index, (drone_id, (hx, hy, _)) in enumerate(sorted(self.homes.items())):
            colour = self.colour_of(drone_id, index)
            centre = self.to_screen(hx, hy)
            if self.fence_radius_m is not None:
                r_px = self.fence_radius_m * scale
                painter.setPen(QPen(QColor("#c62828"), 1.5, Qt.PenStyle.DashLine))
                painter.setBrush(Qt.BrushStyle.NoBrush)
                painter.drawEllipse(centre, r_px, r_px)
            painter.setPen(QPen(colour, 2))
            painter.setBrush(QColor("#ffffff"))
            painter.drawRect(QRectF(centre.x() - 6, centre.y() - 6, 12, 12))
            painter.setPen(colour)
            painter.drawText(
                QRectF(centre.x() - 6, centre.y() - 6, 12, 12), Qt.AlignmentFlag.AlignCenter, "H"
            )

    def legend_lines(self) -> list[list[tuple[str, str]]]:
        """Lines of (colour, text) runs: the drones in their colours, then what each mark means."""
        drones = [(self.colour_of(d, i).name(), f"▲ {d}  ") for i, d in enumerate(sorted(self.drones))]
        fence = "fence: not known"
        if self.fence_radius_m is not None:
            fence = f"- - geofence {self.fence_radius_m:g} m"
        marks = [("#444444", "H home  "), ("#c62828", fence + "  ")]
        if self.targets:
            marks.append(("#d32f2f", "■ sim target  "))
        marks += [("#b71c1c", "✕ marked  "), ("#2e7d32", "○ declared  "), ("#444444", "⊕ goto")]
        lines = [drones, marks]
        if self.geo_origin is not None:
            lat, lon, alt = self.geo_origin
            lines.append(
                [("#444444", f"(0, 0) = {lat:.6f}, {lon:.6f}, {alt:.0f} m · grid {self._grid_m:g} m")]
            )
        else:
            lines.append([("#444444", f"grid {self._grid_m:g} m")])
        return lines

    def _legend(self, painter: QPainter) -> None:
        """Bottom left, small, above the pointer line: the corners are where drones are least."""
        font = QFont(painter.font())
        font.setPointSizeF(max(6.0, font.pointSizeF() - 1.5))
        painter.save()
        painter.setFont(font)
        metrics = painter.fontMetrics()
        lines = self.legend_lines()
        width = max(sum(metrics.horizontalAdvance(text) for _, text in line) for line in lines) + 10
        height = metrics.height() * len(lines) + 6
        box = QRectF(4, self.height() - 24 - height, width, height)
        backing = QColor("#ffffff")
        backing.setAlpha(200)
        painter.fillRect(box, backing)
        for row, line in enumerate(lines):
            x = box.left() + 5
            y = box.top() + 3 + metrics.ascent() + row * metrics.height()
            for colour, text in line:
                painter.setPen(QColor(colour))
                painter.drawText(QPointF(x, y), text)
                x += metrics.horizontalAdvance(text)
        painter.restore()

    def keyPressEvent(self, event: object) -> None:  # noqa: N802 (Qt's name)
        from PyQt6.QtGui import QKeyEvent

        if isinstance(event, QKeyEvent) and event.key() == Qt.Key.Key_F:
            self.fit_fence = not self.fit_fence
            self.update()
            return
        super().keyPressEvent(event)  # type: ignore[arg-type]

    def mouseMoveEvent(self, event: QMouseEvent | None) -> None:  # noqa: N802 (Qt's name)
        if event is not None:
            self.pointer = self.to_world(event.position())
            self.update()

    def leaveEvent(self, event: object) -> None:  # noqa: N802 (Qt's name)
        self.pointer = None
        self.update()

    def _grid(self, painter: QPainter) -> None:
        scale = self._view[2]
        step_m = 5.0 if scale > 8 else 10.0 if scale > 3 else 50.0
        painter.setPen(QPen(QColor("#ddd8c8"), 1))
        top_left, bottom_right = (
            self.to_world(QPointF(0, 0)),
            self.to_world(QPointF(self.width(), self.height())),
        )
        x = math.floor(bottom_right[0] / step_m) * step_m
        while x <= top_left[0]:
            a, b = self.to_screen(x, top_left[1]), self.to_screen(x, bottom_right[1])
            painter.drawLine(a, b)
            x += step_m
        y = math.floor(top_left[1] / step_m) * step_m
        while y <= bottom_right[1]:
            a, b = self.to_screen(top_left[0], y), self.to_screen(bottom_right[0], y)
            painter.drawLine(a, b)
            y += step_m
        painter.setPen(QColor("#888888"))
        self._grid_m = step_m

    def _drone(self, painter: QPainter, pose: Pose, colour: QColor) -> None:
        centre = self.to_screen(pose.x_m, pose.y_m)
        yaw = math.radians(pose.yaw_deg)
        reach_m = 12.0
        half = math.radians(self.hfov_deg / 2)
        wedge = QPolygonF([centre])
        for k in range(9):
            a = yaw - half + 2 * half * k / 8
            wedge.append(self.to_screen(pose.x_m + reach_m * math.cos(a), pose.y_m + reach_m * math.sin(a)))
        fill = QColor(colour)
        fill.setAlpha(45)
        painter.setPen(QPen(QColor(colour), 1, Qt.PenStyle.DotLine))
        painter.setBrush(fill)
        painter.drawPolygon(wedge)
        # body: a triangle pointing along the heading
        size = 9.0
        pts = []
        for angle, r in ((0.0, size), (2.5, size * 0.7), (-2.5, size * 0.7)):
            a = yaw + angle
            pts.append(QPointF(centre.x() + r * math.sin(a), centre.y() - r * math.cos(a)))
        painter.setPen(QPen(QColor("#000000"), 1))
        painter.setBrush(colour)
        painter.drawPolygon(QPolygonF(pts))

    def mousePressEvent(self, event: QMouseEvent | None) -> None:  # noqa: N802 (Qt's name)
        if event is None:
            return
        world = self.to_world(event.position())
        if self.picking:  # a left click picks the GoTo point, a right click cancels (not Esc: e-stop)
            self.picking = False
            self.update()
            if event.button() == Qt.MouseButton.LeftButton and self.on_pick is not None:
                self.on_pick(world)
            return
        if event.button() == Qt.MouseButton.LeftButton:
            self.marks.append(world)
        elif event.button() == Qt.MouseButton.RightButton and self.marks:
            nearest = min(self.marks, key=lambda m: math.dist(m, world))
            self.marks.remove(nearest)
        if self.on_marks is not None:
            self.on_marks(list(self.marks))
        self.update()

    def render_bgr(self) -> np.ndarray:
        """The map as a BGR image (for a commander model). Call on the GUI thread."""
        from PyQt6.QtGui import QImage

        image = self.grab().toImage().convertToFormat(QImage.Format.Format_RGB888)
        width, height = image.width(), image.height()
        ptr = image.constBits()
        assert ptr is not None
        rows = np.frombuffer(ptr.asstring(image.sizeInBytes()), np.uint8).reshape(
            height, image.bytesPerLine()
        )
        rgb = rows[:, : width * 3].reshape(height, width, 3)
        return np.ascontiguousarray(rgb[:, :, ::-1])
