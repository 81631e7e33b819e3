# ruff: noqa: N802 -- the method names are AirSim wire names
"""AirSim's world effects (RpcLibServerBase.cpp; PythonClient/airsim/client.py): simSetWind, the
weather (simEnableWeather, simSetWeatherParameter) and trace lines (simSetTraceLine). What they set
is the shared WorldEffects (dcGetWorldEffects reports it: sim_bridge.rpc.extensions)."""

from __future__ import annotations

import logging
import math

import numpy as np

from common.errors import ConfigError
from sim_bridge.rpc.dispatch import HandlerTable
from sim_bridge.rpc.extensions import WorldEffects
from sim_bridge.rpc.local_frames import LocalFrames
from sim_bridge.rpc.wire import Vector3Msg, parse_vec3
from sim_bridge.sim.weather import ENABLED_INDEX, Weather
from sim_bridge.sim.weather import PARAMETERS as WEATHER_PARAMETERS

log = logging.getLogger(__name__)


class WeatherApi:
    """Wind, weather and trace lines over the world and its effects."""

    def __init__(self, frames: LocalFrames, effects: WorldEffects) -> None:
        self.world = frames.world
        self._frames = frames
        self.effects = effects
        self._warned: set[str] = set()

    def handlers(self) -> HandlerTable:
        return {
            "simSetWind": self.simSetWind,
            "simEnableWeather": self.simEnableWeather,
            "simSetWeatherParameter": self.simSetWeatherParameter,
            "simSetTraceLine": self.simSetTraceLine,
        }

    def simSetWind(self, wind: Vector3Msg) -> None:
        """The wind (world NED, m/s) for every vehicle: a drag force on each (sim_bridge.sim.wind)."""
        w = np.array(parse_vec3(wind, "wind"), float)
        if not np.isfinite(w).all():
            raise ConfigError(f"wind must be finite, got {w.tolist()}")
        with self.world.lock:
            self.effects.wind_ned = w
            for slot in self.world.vehicles.values():
                slot.model.wind_ned = w.copy()

    def _no_visible_effect(self, method: str) -> None:
        if method not in self._warned:
            self._warned.add(method)
            log.warning("%s: stored, but the built-in simulator's renderers show no effect of it", method)

    def simEnableWeather(self, enable: bool) -> None:
        """AirSim's weather switch: the parameters show (sim_bridge.sim.weather) only while it is on."""
        self.effects.weather_enabled = bool(enable)
        self._show_weather()

    def simSetWeatherParameter(self, param: int, val: float) -> None:
        """One of AirSim's WeatherParameter scalars, 0..1, drawn on every Scene frame by either
        renderer. AirSim zeroes, without a word, a value set while the weather is off: here that is an
        error. Enabled (8) switches the weather as simEnableWeather does."""
        try:
            index, value = int(param), float(val)
        except (TypeError, ValueError):
            raise ConfigError(f"weather parameter {param!r:.40} = {val!r:.40}: expected numbers") from None
        if not 0 <= index < len(WEATHER_PARAMETERS) or not math.isfinite(value):
            raise ConfigError(f"weather parameter {param} = {val}: expected 0-{len(WEATHER_PARAMETERS) - 1}")
        name = WEATHER_PARAMETERS[index]
        if not 0.0 <= value <= 1.0:
            raise ConfigError(f"weather parameter {name} = {value}: AirSim's weather values are 0..1")
        if index == ENABLED_INDEX:
            self.simEnableWeather(value > 0.0)
            return
        if value > 0.0 and not self.effects.weather_enabled:
            raise ConfigError(
                f"simSetWeatherParameter({name}, {value}): the weather is off; call simEnableWeather(True) "
                "first (AirSim would set the value to 0)"
            )
        with self.world.lock:
            self.effects.weather[name] = value
            self._show_weather()

    def _show_weather(self) -> None:
        e = self.effects
        weather = Weather.from_values(e.weather) if e.weather_enabled else None
        # None leaves the frames untouched (the default path pays nothing)
        self.world.cameras.weather = weather if weather is not None and weather.visible else None

    def simSetTraceLine(self, color_rgba: list[float], thickness: float, vehicle_name: str) -> None:
        m = self._frames.slot(vehicle_name).model
        try:
            rgba = [float(c) for c in color_rgba]
        except (TypeError, ValueError):
            raise ConfigError(f"color_rgba must be 4 numbers, got {color_rgba!r:.80}") from None
        if len(rgba) != 4 or not math.isfinite(float(thickness)):
            raise ConfigError(f"color_rgba must be 4 numbers and thickness finite, got {rgba}, {thickness}")
        self.effects.trace_lines[m.name] = {"color_rgba": rgba, "thickness": float(thickness)}
        self._no_visible_effect("simSetTraceLine")
