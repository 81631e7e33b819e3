"""Wind as a force on the multirotor: AirSim's drag on the air-relative velocity, and the velocity loop
that fights it with SimpleFlight's gains.

The drag is AirLib's (physics/FastPhysicsEngine.hpp, getDragWrench): the body's velocity relative to
the air, `v - wind`, is taken into the body frame; each of six faces (normal n, drag factor f) whose
velocity component c = n . v_body exceeds kDragMinVelocity (0.1 m/s) gets the force
-n f rho c^2; the sum goes back to the world frame. The faces are MultiRotorPhysicsBody.hpp's
createDragVertices for the default quadrotor (MultiRotorParams.hpp setupFrameGenericQuad): a body box
of 0.18 x 0.11 x 0.04 m plus four propellers (RotorParams.hpp: 0.2286 m diameter, 1 cm high), with the
drag factor area x linear_drag_coefficient (1.3 / 4) / 2. AirLib's angular-velocity term (the face's
offset x the body rate) is left out: the faces sit within 9 cm of the centre.

The project's translational model tracks its commands as if the still-air drag were compensated, so
the wind's force is the difference the wind makes, drag(v - wind) - drag(v): zero without wind, the
whole drag of the wind on a hovering drone. That force drives a separate velocity, `wind velocity`,
which the velocity loop rejects as SimpleFlight's does (firmware/Params.hpp, VelocityController.hpp):
horizontally a P loop of gain 0.2 whose output scales the tilt limit pi/5.5 rad, i.e. an acceleration
of g x 0.2 x pi/5.5 = 1.12 m/s^2 per m/s (P only: a steady wind leaves a steady velocity error);
vertically P 2 and I 2 on the throttle, half a throttle unit per unit of output, times the rotors'
16.7 m/s^2 of thrust. The loop's acceleration is limited as the commands' is (MultirotorLimits).
The position loops see where the drone really is, so a hold pulls back what the wind pushed.
"""

from __future__ import annotations

import math

import numpy as np

from sim_bridge.sim.attitude import GRAVITY_M_S2, MASS_KG, MAX_THRUST_N, MAX_TILT_RAD

AIR_DENSITY_KG_M3 = 1.225  # sea level; AirLib's environment gives 1.211 at its default home (122 m)
LINEAR_DRAG_COEFFICIENT = 1.3 / 4.0  # MultiRotorParams::Params::linear_drag_coefficient
BODY_BOX_M = (0.180, 0.11, 0.040)  # setupFrameGenericQuad's body_box
ROTOR_COUNT = 4
PROPELLER_DIAMETER_M = 0.2286  # RotorParams::propeller_diameter
PROPELLER_HEIGHT_M = 0.01  # RotorParams::propeller_height
DRAG_MIN_VELOCITY_M_S = 0.1  # FastPhysicsEngine::kDragMinVelocity


def _drag_factors() -> np.ndarray:
    """Per body axis (forward, right, down): the faces' drag factor, m^2 (createDragVertices)."""
    x, y, z = BODY_BOX_M
    disc = math.pi * PROPELLER_DIAMETER_M * PROPELLER_DIAMETER_M  # AirLib's propeller_area, as written
    xsection = math.pi * PROPELLER_DIAMETER_M * PROPELLER_HEIGHT_M
    areas = np.array(
        [y * z + ROTOR_COUNT * xsection, x * z + ROTOR_COUNT * xsection, x * y + ROTOR_COUNT * disc]
    )
    return areas * LINEAR_DRAG_COEFFICIENT / 2.0


DRAG_FACTORS_M2 = _drag_factors()

# SimpleFlight's velocity loop as an acceleration per m/s of velocity error
VELOCITY_GAIN_XY_1_S = GRAVITY_M_S2 * 0.2 * MAX_TILT_RAD  # VelocityPid kP x angle_level max_limit
THROTTLE_ACCEL_M_S2 = MAX_THRUST_N / MASS_KG / 2.0  # throttle = (1 - pid output) / 2
VELOCITY_GAIN_Z_1_S = 2.0 * THROTTLE_ACCEL_M_S2  # VelocityPid z: kP 2
VELOCITY_INTEGRAL_Z_1_S2 = 2.0 * THROTTLE_ACCEL_M_S2  # VelocityPid z: kI 2
SETTLED_M_S = 1e-9  # a wind velocity below this with no wind is dropped (the model is wind-free again)


def drag_accel_ned(air_velocity_ned: np.ndarray, body_to_ned: np.ndarray) -> np.ndarray:
    """AirLib's drag acceleration (m/s^2, world NED) on the default quadrotor moving at
    `air_velocity_ned` (its velocity minus the wind) with orientation `body_to_ned` (FRD -> NED)."""
    v_body = body_to_ned.T @ np.asarray(air_velocity_ned, float)
    speed = np.abs(v_body)
    force = np.where(speed > DRAG_MIN_VELOCITY_M_S, -np.sign(v_body) * DRAG_FACTORS_M2 * speed * speed, 0.0)
    return body_to_ned @ (force * AIR_DENSITY_KG_M3 / MASS_KG)


class WindResponse:
    """The velocity the wind adds to a multirotor and the loop that rejects it (see the module doc)."""

    __slots__ = ("velocity_ned", "z_integral")

    def __init__(self) -> None:
        self.velocity_ned = np.zeros(3)  # m/s, added to the commanded motion's velocity
        self.z_integral = 0.0  # m, SimpleFlight's z velocity integral

    def active(self, wind_ned: np.ndarray) -> bool:
        return bool(wind_ned.any()) or bool(self.velocity_ned.any())

    def reset(self) -> None:
        self.velocity_ned = np.zeros(3)
        self.z_integral = 0.0

    def step(
        self,
        wind_ned: np.ndarray,
        velocity_ned: np.ndarray,
        body_to_ned: np.ndarray,
        max_accel_m_s2: float,
        dt_s: float,
    ) -> np.ndarray:
        """Advance by dt_s at the body's total velocity; returns the loop's control acceleration
        (what the thrust adds against the wind: the body tilts by it)."""
        force = drag_accel_ned(velocity_ned - wind_ned, body_to_ned)
        if wind_ned.any():  # still air: the commands' own tracking absorbs drag(v)
            force = force - drag_accel_ned(velocity_ned, body_to_ned)
        else:
            force = np.zeros(3)
        w = self.velocity_ned
        self.z_integral += float(w[2]) * dt_s
        control = np.array(
            [
                -VELOCITY_GAIN_XY_1_S * w[0],
                -VELOCITY_GAIN_XY_1_S * w[1],
                -VELOCITY_GAIN_Z_1_S * w[2] - VELOCITY_INTEGRAL_Z_1_S2 * self.z_integral,
            ]
        )
        norm = float(np.linalg.norm(control))
        if norm > max_accel_m_s2:
            control *= max_accel_m_s2 / norm
        self.velocity_ned = w + (force + control) * dt_s
        settled = float(np.abs(self.velocity_ned).max()) < SETTLED_M_S and abs(self.z_integral) < SETTLED_M_S
        if settled and not wind_ned.any():
            self.reset()
        return control
