"""The window's widgets that its controllers update, as one typed bundle, and the ack wording they share.

MainWindow builds the widgets (the layout is its job); the controllers (supervision, fleet events,
operator commands, GoTo, the live view) each get this bundle instead of the whole window, so what a
controller may touch is written down here."""

from __future__ import annotations

from dataclasses import dataclass

from ground_station.app.alerts import AlertModel
from ground_station.app.map_view import MapView
from ground_station.app.panels import DeclarationLog, InstructionPanel, OrderHistory, SafetyBar
from ground_station.app.plots import TelemetryPlots
from ground_station.app.tiles import DroneTile
from ground_station.fleet.client import SAFETY_COMMANDS
from ground_station.fleet.state import AckRecord

# The message types of the safety commands: their acks are shown by the safety controls themselves.
SAFETY_KINDS = frozenset(cls.TYPE for cls in SAFETY_COMMANDS.values())


@dataclass(frozen=True)
class Views:
    tiles: dict[str, DroneTile]
    safety: SafetyBar
    map: MapView
    instruction: InstructionPanel
    orders: OrderHistory
    declarations: DeclarationLog
    alerts: AlertModel
    plots: TelemetryPlots


def ack_text(kind: str, ack: AckRecord) -> str:
    text = f"{kind}: {ack.result} in {ack.latency_s * 1000:.0f} ms"
    return text if ack.result == "ok" else f"{text} — {ack.reason}"
