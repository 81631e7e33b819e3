"""The emulated Tello's state datagrams: one line to the client's state port at `state_hz` once
"command" was received, and after every reply.

State string (SDK guides): SDK 1.3 `pitch:..;...;agz:..;`; EDU/TT prepend the mission-pad fields
`mid:..;x:..;y:..;z:..;mpry:..,..,..;` (mid -2 and x/y/z -200 while pad detection is off, -1/-100
when on and no pad is seen: the simulator has no pads). The stream keeps flowing while the drone
auto-lands.
"""

from __future__ import annotations

import logging
import socket
import threading

from sim_bridge.emulators.tello_airframe import TelloAirframe
from sim_bridge.emulators.tello_sdk import TelloEmulatorConfig, TelloStatus

# the emulator's one logger name: its log lines read as before the split
log = logging.getLogger("sim_bridge.emulators.tello_emulator")


class TelloStateStream:
    def __init__(
        self,
        airframe: TelloAirframe,
        status: TelloStatus,
        config: TelloEmulatorConfig,
    ) -> None:
        self.airframe = airframe
        self.status = status
        self.config = config  # read at each send: SDK 3.0 `port` moves the client's state port
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind((config.ip, 0))

    def line(self) -> str:
        r = self.airframe.reading()
        h_cm = max(0, round(r.height_m * 100))
        pads = ""
        if self.config.sdk != "1.3":  # EDU / TT: mission-pad fields first
            mid, xyz = (-1, -100) if self.status.mission_pads else (-2, -200)
            pads = f"mid:{mid};x:{xyz};y:{xyz};z:{xyz};mpry:0,0,0;"
        # velocities in dm/s
        return (
            f"{pads}pitch:0;roll:0;yaw:{round(r.yaw_deg)};vgx:{round(r.vgx_m_s * 10)};"
            f"vgy:{round(r.vgy_m_s * 10)};vgz:{round(r.vgz_m_s * 10)};templ:60;temph:63;"
            f"tof:{h_cm + 10};h:{h_cm};bat:{round(self.airframe.battery_pct)};"
            f"baro:{100.0 + r.height_m:.2f};time:{self.status.flight_time_s()};"
            "agx:0.00;agy:0.00;agz:-1000.00;\r\n"
        )

    def send(self) -> None:
        st = self.status
        if st.client_ip is None or not st.sdk_mode or st.link_down.is_set():
            return
        try:
            self.sock.sendto(self.line().encode(), (st.client_ip, self.config.client_state_port))
        except OSError:
            log.debug("state send failed", exc_info=True)

    def run(self, stop: threading.Event) -> None:
        """The state thread; it also re-issues held sticks so body axes follow the turning heading."""
        st = self.status
        period_s = 1.0 / self.config.state_hz
        while not stop.wait(period_s):
            if st.flying and st.busy is None and any(st.rc):
                self.airframe.apply_rc()
            self.send()

    def close(self) -> None:
        self.sock.close()
