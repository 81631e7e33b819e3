"""The built-in simulator's own blueprint and material names, as a foreign Unreal map would list them
in simListAssets: what `simSpawnObject` and `simSetObjectMaterial` accept besides the project's asset
strings (which only the non-strict mode takes). `episodes/asset_maps/builtin-strict.yaml` maps the
episode records' kinds and paints onto these names, as a user's asset map would for their map.
"""

from __future__ import annotations

from sim_bridge.sim.assets import COLOURS

# blueprint name -> asset kind (spawned in the kind's default paint)
BLUEPRINTS: dict[str, str] = {
    "BP_Car": "car",
    "BP_SUV": "suv",
    "BP_Van": "van",
    "BP_Truck": "truck",
    "BP_Person": "person",
    "BP_Cyclist": "cyclist",
    "BP_Drone": "drone",
}
# material name -> paint colour
MATERIALS: dict[str, str] = {f"M_Paint_{colour.capitalize()}": colour for colour in COLOURS}


def with_colour(asset: str, colour: str) -> str:
    """An asset string repainted: KIND[:ARG]@COLOUR."""
    return f"{asset.split('@', 1)[0]}@{colour}"
