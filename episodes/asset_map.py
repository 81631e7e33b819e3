"""Asset maps: how an episode record's objects become actors on an AirSim map (YAML, issue 19).

A record names objects by kind and paint ("van", "pink"); an Unreal map has blueprints and materials
of its own. An asset map says, per kind, which blueprint `simSpawnObject` spawns and, per paint, which
material `simSetObjectMaterial` puts on it; or names an actor already on the map that is moved into
place with `simSetObjectPose` instead (and put back afterwards). Example (see
episodes/asset_maps/builtin-strict.yaml for a complete one):

    name: my-city
    blueprints: true            # simSpawnObject(..., is_blueprint=True)
    kinds: {car: BP_Sedan, van: BP_Van, person: BP_Pedestrian}
    paints: {red: M_CarPaint_Red, pink: M_CarPaint_Pink}
    actors: {ep_target: Van_12, "suv@green": SUV_3}   # by record object id, kind@paint or kind
    scene_markers: {residential: Street_Sign_Main}    # optional: the map must hold this actor

`builtin` (no file): the built-in simulator's own asset strings ("van@pink"), for `dronecats sim`
without --strict-airsim; it checks the scene by one of the built-in scene's named objects.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import msgspec
import yaml

from common.config import file_errors
from common.errors import ConfigError
from episodes.records import SceneObject
from episodes.scenario import asset_string

ASSET_MAP_DIR = Path(__file__).resolve().parent / "asset_maps"
# One named object of each built-in scene (non-strict `dronecats sim`), to check the server's scene.
BUILTIN_SCENE_MARKERS = {"residential": "parked_car_1", "blocks": "sign_north", "indoor": "sign_kitchen"}


class AssetMap(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    name: str = "asset map"
    kinds: dict[str, str] = {}  # record class -> blueprint / asset name for simSpawnObject
    paints: dict[str, str] = {}  # record colour -> material for simSetObjectMaterial
    actors: dict[str, str] = {}  # record object id | "kind@paint" | kind -> existing actor, moved
    scene_markers: dict[str, str] = {}  # record scene -> an actor the map must have
    blueprints: bool = False  # simSpawnObject's is_blueprint
    builtin_assets: bool = False  # spawn the built-in simulator's asset strings (no kinds/paints)


BUILTIN = AssetMap(name="builtin", scene_markers=BUILTIN_SCENE_MARKERS, builtin_assets=True)


@dataclass(frozen=True)
class Placement:
    """What to do with one record object: move an existing `actor`, or spawn `asset` (+ `material`)."""

    actor: str | None = None
    asset: str | None = None
    material: str | None = None


def load_asset_map(spec: str) -> AssetMap:
    """`builtin`, a shipped map's name (episodes/asset_maps/NAME.yaml) or a YAML file."""
    if spec == "builtin":
        return BUILTIN
    path = Path(spec)
    if not path.is_file() and (ASSET_MAP_DIR / f"{spec}.yaml").is_file():
        path = ASSET_MAP_DIR / f"{spec}.yaml"
    with file_errors("asset map", path, "YAML", yaml.YAMLError, shown=repr(spec)):
        data = yaml.safe_load(path.read_text())
    try:
        return msgspec.convert(data or {}, AssetMap)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"asset map {path}: {exc}") from None


def placement(amap: AssetMap, obj: SceneObject) -> Placement:
    """How `amap` puts `obj` on the map; a ConfigError names what the map lacks."""
    keys = [obj.id, f"{obj.class_}@{obj.colour}" if obj.colour else None, obj.class_]
    for key in keys:
        if key and key in amap.actors:
            return Placement(actor=amap.actors[key])
    if amap.builtin_assets:
        return Placement(asset=asset_string(obj))
    if obj.inscription:
        raise ConfigError(
            f"asset map {amap.name!r}: object {obj.id!r} carries the inscription {obj.inscription!r}, "
            "which stock AirSim cannot write: map it to an actor that shows it (actors:)"
        )
    if obj.class_ not in amap.kinds:
        raise ConfigError(
            f"asset map {amap.name!r} has no blueprint for kind {obj.class_!r} (object {obj.id!r}); "
            f"kinds: {sorted(amap.kinds)}"
        )
    material = None
    if obj.colour:
        if obj.colour not in amap.paints:
            raise ConfigError(
                f"asset map {amap.name!r} has no material for paint {obj.colour!r} (object {obj.id!r}); "
                f"paints: {sorted(amap.paints)}"
            )
        material = amap.paints[obj.colour]
    return Placement(asset=amap.kinds[obj.class_], material=material)
