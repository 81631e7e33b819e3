"""The operator's commands from the window, besides safety (safety_commands) and GoTo (goto): the
instruction or structure to start, and the verdict on a declaration.

Each runs off the GUI thread (FleetBridge.submit) under a label ("instruct", "structure",
"judge:ID:VERDICT"); its result comes back through FleetBridge's `done` signal to `on_done`, on the
GUI thread."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from common.capabilities import TakesMapImage, TakesMarkedTargets
from ground_station.app.bridge import FleetBridge
from ground_station.app.panels import FLEET
from ground_station.app.views import Views
from ground_station.fleet.state import AckRecord
from ground_station.fleet.structures import Structure, make_structure


class OperatorCommands:
    """Owns the running structure (`structure`): the operator replaces it by starting another."""

    def __init__(
        self,
        bridge: FleetBridge,
        views: Views,
        map_image: Callable[[], Any],
    ) -> None:
        """`map_image`: the newest rendered map, for a model commander that looks at it. The fleet is
        the bridge's (`bridge.fleet`)."""
        self.bridge = bridge
        self.views = views
        self.map_image = map_image
        self.operator = operator_name()  # who signs the verdicts
        self.structure: Structure | None = None

    # ---- instruction and structure -----------------------------------------------------------------
    def on_send(self, text: str, target: str, structure: str, model: str) -> None:
        marks = list(self.views.map.marks)
        if structure == "per-drone" and target != FLEET:
            self.views.orders.add(f"instruction to {target}: “{text}”")
            self.bridge.submit("instruct", lambda: self.bridge.fleet.instruct(text, [target]))
            return
        try:
            new = make_structure(
                structure,
                self.bridge.fleet,
                model_url=model or None,
                commander=model or "rule",
                marked_targets=marks,
            )
        except Exception as exc:
            self.views.instruction.status.setText(f"cannot start {structure}: {exc}")
            return
        if isinstance(new, TakesMapImage) and model:
            new.map_image_source = self.map_image
        old, self.structure = self.structure, new
        self.views.orders.add(f"{structure} · fleet: “{text}”")
        self.views.instruction.status.setText(f"{structure}: starting …")

        def start() -> str:
            if old is not None:
                old.stop()
            new.start(text)
            return structure

        self.bridge.submit("structure", start)

    def marks_changed(self, marks: list[tuple[float, float]]) -> None:
        structure = self.structure
        if isinstance(structure, TakesMarkedTargets):
            structure.marked_targets = list(marks)

    # ---- judgement ---------------------------------------------------------------------------------
    def on_judge(self, declaration_id: str, accept: bool) -> None:
        self.bridge.submit(
            f"judge:{declaration_id}:{'accept' if accept else 'reject'}",
            lambda: self.bridge.fleet.judge(declaration_id, accept, operator=self.operator),
        )

    # ---- results (FleetBridge.done) ----------------------------------------------------------------
    def on_done(self, label: str, result: Any) -> None:
        views = self.views
        if label.startswith("judge:"):
            _, declaration_id, verdict = label.split(":", 2)
            if isinstance(result, AckRecord):
                result_text = result.result if result.result == "ok" else f"{result.result} ({result.reason})"
            else:
                result_text = f"failed: {result}"
            views.declarations.judged(declaration_id, verdict, result_text, operator=self.operator)
            if result_text != "ok":
                views.alerts.raise_alert("error", "", f"{verdict} not confirmed: {result_text}", key="judge")
        elif label == "structure":
            text = f"failed: {result}" if isinstance(result, Exception) else f"{result}: running"
            if self.structure is not None and self.structure.errors:
                text += f" ({self.structure.errors[-1]})"
            views.instruction.status.setText(text)
            if isinstance(result, Exception):
                views.alerts.raise_alert("error", "", f"structure {text}", key="structure")
        elif label == "instruct" and isinstance(result, Exception):
            views.instruction.status.setText(f"instruction failed: {result}")
            views.alerts.raise_alert("error", "", f"instruction failed: {result}", key="instruct")

    def stop(self) -> None:
        if self.structure is not None:
            self.structure.stop()


def operator_name() -> str:
    import getpass

    try:
        return getpass.getuser()
    except Exception:  # no user name in this environment
        return "operator"
