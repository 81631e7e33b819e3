"""The control-tower map keeps drone labels readable when drones crowd together (a fleet converging
on one target put four names over each other)."""

from __future__ import annotations

import itertools
import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest

pytest.importorskip("PyQt6")

from PyQt6.QtCore import QPointF

from ground_station.app.map_view import place_labels


def test_labels_of_crowded_drones_do_not_overlap() -> None:
    anchors = [QPointF(200, 150), QPointF(202, 151), QPointF(199, 149), QPointF(201, 153), QPointF(200, 150)]
    sizes = [(64.0, 14.0)] * len(anchors)
    rects = place_labels(anchors, sizes)
    assert len(rects) == len(anchors)
    for a, b in itertools.combinations(rects, 2):
        assert not a.intersects(b), (a, b)
    for anchor, rect in zip(anchors, rects, strict=True):  # each stays next to its drone
        assert abs(rect.center().x() - anchor.x()) < 100 and abs(rect.center().y() - anchor.y()) < 60


def test_a_lone_drone_keeps_its_label_right_below() -> None:
    (rect,) = place_labels([QPointF(50, 50)], [(40.0, 12.0)])
    assert rect.left() == 60 and rect.top() == 56
