"""The MAVLink parameter protocol (PARAM_REQUEST_LIST/READ, PARAM_SET -> PARAM_VALUE) over the
firmware's parameter store (sim_bridge.emulators.mavlink_params: its defaults and encodings)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sim_bridge.emulators.mavlink_emulator.link import MavLink
from sim_bridge.emulators.mavlink_params import ParamStore

if TYPE_CHECKING:
    from types import ModuleType

    from pymavlink.dialects.v20.all import (
        MAVLink_param_request_list_message,
        MAVLink_param_request_read_message,
        MAVLink_param_set_message,
    )


def _param_id(msg: MAVLink_param_request_read_message | MAVLink_param_set_message) -> str:
    return msg.param_id if isinstance(msg.param_id, str) else msg.param_id.decode(errors="replace")


class ParamProtocol:
    def __init__(self, params: ParamStore, link: MavLink, m: ModuleType) -> None:
        self.params = params
        self.link = link
        self.m = m

    def send(self, name: str) -> None:
        names = self.params.names()
        p = self.params.params[name]
        self.link.send(
            self.link.mav.param_value_send,
            name.encode(),
            self.params.encode(name),
            p.kind,
            len(names),
            names.index(name),
        )

    def on_request_list(self, msg: MAVLink_param_request_list_message) -> None:
        for name in self.params.names():
            self.send(name)

    def on_request_read(self, msg: MAVLink_param_request_read_message) -> None:
        pid = _param_id(msg)
        names = self.params.names()
        if msg.param_index >= 0 and msg.param_index < len(names):
            self.send(names[msg.param_index])
        elif pid in self.params.params:
            self.send(pid)

    def on_set(self, msg: MAVLink_param_set_message) -> None:
        name = _param_id(msg)
        if name not in self.params.params:
            self.link.statustext(self.m.MAV_SEVERITY_ERROR, f"unknown param: {name}")
            return
        try:
            value = self.params.decode(name, float(msg.param_value), int(msg.param_type))
            self.params.set(name, value)
        except (ValueError, OverflowError) as exc:
            self.link.statustext(self.m.MAV_SEVERITY_ERROR, f"param set failed: {exc}")
        self.send(name)  # the value now held, whether the set was taken or not
