"""The ground colour lookup: points it cannot place (NaN, or past int32 from a ray grazing the horizon)
get the base colour without an undefined float-to-int cast."""

from __future__ import annotations

import warnings

import numpy as np

from sim_bridge.sim.ground import GroundMap


def ground() -> GroundMap:
    g = GroundMap((10, 20, 30))
    g.add(0.0, 1.0, 0.0, 1.0, (1.0, 0.0, 0.0, 1.0))
    return g


def test_index_inside_and_outside_the_raster() -> None:
    out = ground().index_at(np.array([0.5, 5.0, -3.0]), np.array([0.5, 0.5, 0.5]))
    assert out.tolist() == [1, 0, 0]


def test_nan_and_far_points_get_the_base_colour_without_a_cast_warning() -> None:
    x = np.array([np.nan, 3.0e9, -np.inf, 0.5])
    y = np.array([0.5, 0.5, 0.5, np.nan])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "invalid value encountered in cast" would raise here
        out = ground().index_at(x, y)
    assert out.tolist() == [0, 0, 0, 0]
