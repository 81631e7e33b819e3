"""common.frames: round trips over random values, rotation properties, and the sign conventions of
AirSim and PX4, each row checked against the source that states it."""

from __future__ import annotations

import math

import numpy as np
import pytest

from common.frames import (
    euler_from_matrix,
    euler_to_quaternion,
    forward_right_to_north_east,
    heading_to_ned,
    ned_to_heading,
    north_east_to_forward_right,
    offset_to_ned,
    quat_from_rotation,
    quat_normalised,
    quaternion_euler_deg,
    rotation_from_euler,
    rotation_from_quat,
    rotation_from_unit_quat,
    rotation_pry_deg,
    yaw_from_ned_quat,
    yaw_quat_ned_wxyz,
    yaw_rotation_ned,
)

N = 200
SEED = 20261208


def random_quats(rng: np.random.Generator, n: int = N) -> list[tuple[float, float, float, float]]:
    """Uniform unit quaternions (normalised Gaussians), with w >= 0 as quat_from_rotation returns."""
    qs = rng.normal(size=(n, 4))
    qs /= np.linalg.norm(qs, axis=1, keepdims=True)
    qs[qs[:, 0] < 0] *= -1.0
    return [tuple(map(float, q)) for q in qs]  # type: ignore[misc]


def random_euler(rng: np.random.Generator, n: int = N) -> np.ndarray:
    """(roll, pitch, yaw) rows away from gimbal lock (|pitch| < 85 deg), where ZYX angles are unique."""
    return np.column_stack(
        [
            rng.uniform(-math.pi, math.pi, n),
            rng.uniform(-math.radians(85), math.radians(85), n),
            rng.uniform(-math.pi, math.pi, n),
        ]
    )


def same_angle(a: float, b: float) -> bool:
    return abs(math.remainder(a - b, 2 * math.pi)) < 1e-9


# ---- round trips


def test_quat_matrix_quat_round_trip() -> None:
    rng = np.random.default_rng(SEED)
    for q in random_quats(rng):
        back = quat_from_rotation(rotation_from_unit_quat(*q))
        assert back == pytest.approx(q, abs=1e-12)


def test_euler_quat_euler_round_trip() -> None:
    rng = np.random.default_rng(SEED + 1)
    for roll, pitch, yaw in random_euler(rng):
        got = quaternion_euler_deg(*euler_to_quaternion(roll, pitch, yaw))
        for want_rad, got_deg in zip((roll, pitch, yaw), got, strict=True):
            assert same_angle(want_rad, math.radians(got_deg))


def test_euler_matrix_euler_round_trip_and_quat_agrees() -> None:
    rng = np.random.default_rng(SEED + 2)
    for roll, pitch, yaw in random_euler(rng):
        r = rotation_from_euler(roll, pitch, yaw)
        for want, got in zip((roll, pitch, yaw), euler_from_matrix(r), strict=True):
            assert same_angle(want, got)
        # the quaternion of the same angles is the same rotation
        assert rotation_from_unit_quat(*euler_to_quaternion(roll, pitch, yaw)) == pytest.approx(r, abs=1e-12)


def test_body_world_body_round_trip() -> None:
    rng = np.random.default_rng(SEED + 3)
    for forward, right, up, yaw_deg in rng.uniform(-200.0, 200.0, size=(N, 4)):
        there = heading_to_ned(forward, right, up, yaw_deg)
        assert ned_to_heading(*there, yaw_deg) == pytest.approx((forward, right, up), abs=1e-9)
        ne = forward_right_to_north_east(forward, right, yaw_deg)
        assert north_east_to_forward_right(*ne, yaw_deg) == pytest.approx((forward, right), abs=1e-9)
        # the 3x3 heading rotation says the same as the component form
        assert yaw_rotation_ned(yaw_deg) @ np.array([forward, right, -up]) == pytest.approx(there, abs=1e-9)


def test_offset_to_ned_and_back() -> None:
    rng = np.random.default_rng(SEED + 4)
    for q in random_quats(rng, 50):
        r = rotation_from_unit_quat(*q)
        origin, offset = rng.normal(size=3) * 10, rng.normal(size=3)
        point = offset_to_ned(origin, r, offset)
        assert r.T @ (point - origin) == pytest.approx(offset, abs=1e-12)


# ---- properties of the rotations


def test_rotations_are_orthonormal_with_determinant_one() -> None:
    rng = np.random.default_rng(SEED + 5)
    matrices = [rotation_from_unit_quat(*q) for q in random_quats(rng, 50)]
    matrices += [rotation_from_euler(*e) for e in random_euler(rng, 50)]
    matrices += [yaw_rotation_ned(y) for y in rng.uniform(-720.0, 720.0, 50)]
    matrices += [rotation_pry_deg(*a) for a in rng.uniform(-180.0, 180.0, size=(50, 3))]
    for r in matrices:
        assert r @ r.T == pytest.approx(np.eye(3), abs=1e-12)
        assert np.linalg.det(r) == pytest.approx(1.0, abs=1e-12)


def test_quaternion_normalising() -> None:
    q = (2.0, 0.0, 0.0, 2.0)  # twice the 90 deg yaw
    assert rotation_from_quat(*q) == pytest.approx(yaw_rotation_ned(90.0), abs=1e-12)
    assert math.hypot(*quat_normalised(*q)) == pytest.approx(1.0)
    for bad in ((0.0, 0.0, 0.0, 0.0), (math.nan, 0.0, 0.0, 1.0)):
        with pytest.raises(ValueError, match="zero length"):
            rotation_from_quat(*bad)


def test_yaw_quaternion_and_back() -> None:
    for yaw_deg in (-179.0, -90.0, 0.0, 33.0, 90.0, 179.0):
        q = yaw_quat_ned_wxyz(yaw_deg)
        assert yaw_from_ned_quat(*q) == pytest.approx(yaw_deg)
        assert rotation_from_unit_quat(*q) == pytest.approx(yaw_rotation_ned(yaw_deg), abs=1e-12)


def test_settings_order_is_pitch_roll_yaw() -> None:
    # AirSim's settings.json and VectorMath::toQuaternion take (pitch, roll, yaw)
    assert rotation_pry_deg(10.0, 20.0, 30.0) == pytest.approx(
        rotation_from_euler(math.radians(20.0), math.radians(10.0), math.radians(30.0)), abs=1e-15
    )


# ---- sign tables

EAST = (0.0, 1.0, 0.0)
FORWARD = np.array([1.0, 0.0, 0.0])


@pytest.mark.parametrize(
    ("case", "got", "want"),
    [
        # MAVLink common.xml MAV_FRAME_LOCAL_NED (PX4's world frame): x north, y east, z down, so a
        # body's forward at yaw 0 is north and down is +z
        ("forward at yaw 0 is north", heading_to_ned(1.0, 0.0, 0.0, 0.0), (1.0, 0.0, 0.0)),
        ("up is -z", heading_to_ned(0.0, 0.0, 1.0, 0.0), (0.0, 0.0, -1.0)),
        # MAV_FRAME_BODY_FRD (PX4's body frame): y right; at yaw 0 right is east
        ("right at yaw 0 is east", heading_to_ned(0.0, 1.0, 0.0, 0.0), EAST),
        # yaw is clockwise from north seen from above (AirSim's to_eularian_angles yaw about +z down;
        # PX4's heading): yaw +90 turns forward to east and right to south
        ("forward at yaw +90 is east", heading_to_ned(1.0, 0.0, 0.0, 90.0), EAST),
        ("right at yaw +90 is south", heading_to_ned(0.0, 1.0, 0.0, 90.0), (-1.0, 0.0, 0.0)),
        ("yaw matrix +90: forward -> east", tuple(yaw_rotation_ned(90.0) @ FORWARD), EAST),
        ("east seen at yaw +90 is forward", north_east_to_forward_right(0.0, 1.0, 90.0), (1.0, 0.0)),
    ],
)
def test_ned_frd_signs(case: str, got: tuple[float, ...], want: tuple[float, ...]) -> None:
    assert got == pytest.approx(want, abs=1e-12), case


def test_positive_pitch_noses_up() -> None:
    # AirSim PythonClient/airsim/utils.py to_quaternion(pitch, roll, yaw) is euler_to_quaternion's
    # formula; AirLib's VectorMath::rotateVector turns body vectors into the world with it
    # (Eigen's q._transformVector: q v q*). Forward then rises: world z (down) negative.
    nose = rotation_from_unit_quat(*euler_to_quaternion(0.0, math.radians(10.0), 0.0)) @ FORWARD
    assert nose == pytest.approx((math.cos(math.radians(10.0)), 0.0, -math.sin(math.radians(10.0))))
    # and roll positive puts the right side down: body right gains +z
    right = rotation_from_euler(math.radians(10.0), 0.0, 0.0) @ np.array([0.0, 1.0, 0.0])
    assert right[2] > 0


def test_matches_airsim_client_conventions() -> None:
    """The formulas against the airsim package's own utils (where it is installed)."""
    airsim = pytest.importorskip("airsim")
    rng = np.random.default_rng(SEED + 6)
    for roll, pitch, yaw in random_euler(rng, 50):
        q = airsim.to_quaternion(pitch, roll, yaw)  # AirSim's argument order
        assert euler_to_quaternion(roll, pitch, yaw) == pytest.approx((q.w_val, q.x_val, q.y_val, q.z_val))
        p_air, r_air, y_air = airsim.to_eularian_angles(q)  # returned as (pitch, roll, yaw)
        got = quaternion_euler_deg(q.w_val, q.x_val, q.y_val, q.z_val)
        assert got == pytest.approx(tuple(math.degrees(a) for a in (r_air, p_air, y_air)))
