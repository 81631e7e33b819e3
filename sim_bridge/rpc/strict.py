"""`dronecats sim --strict-airsim`: the built-in simulator behaving like a foreign Unreal map.

- Only stock AirSim methods: no `dc*` extension is served, so each answers rpclib's unknown-function
  error, as a real AirSim server does.
- `simSpawnObject` takes only this map's blueprint names (catalogue.BLUEPRINTS); anything else, the
  project's asset strings ("van@pink") included, is refused the way AirSim refuses an asset missing
  from its registry. Paint comes from `simSetObjectMaterial` with the map's materials.
- The scene's actors carry other names than the built-in scene gives them (Unreal-style names), so
  nothing can find them by the built-in names.
- `simListAssets` lists this map's blueprints and materials only.
So a HIL run against it needs an asset map exactly as against a real map (episodes.hil).
"""

from __future__ import annotations

from common.errors import ConfigError
from sim_bridge.rpc.airsim_api import AirSimApi
from sim_bridge.rpc.catalogue import BLUEPRINTS, MATERIALS
from sim_bridge.rpc.dispatch import HandlerTable
from sim_bridge.sim.world import World

# Unreal-style prefixes of the renamed scene actors, by object class
ACTOR_PREFIX = {"scenery": "StaticMeshActor", "ground": "Landscape"}


def rename_scene_actors(world: World) -> dict[str, str]:
    """Give every scene object present now an Unreal-style name; returns built-in name -> new name."""
    counts: dict[str, int] = {}
    renamed: dict[str, str] = {}
    with world.lock:
        objects = {}
        for name, obj in world.objects.items():
            prefix = ACTOR_PREFIX.get(obj.cls, f"BP_{obj.cls.capitalize()}_C")
            counts[prefix] = counts.get(prefix, 0) + 1
            new = f"{prefix}_{counts[prefix]}"
            obj.name = new
            objects[new] = obj
            renamed[name] = new
        world.objects.clear()
        world.objects.update(objects)
    return renamed


class StrictAssets:
    """A foreign map's asset registry: its blueprints and materials only (world_api.AssetCatalogue)."""

    def resolve(self, asset_name: str) -> str:
        if asset_name not in BLUEPRINTS:
            raise ConfigError(f"There were no objects with name {asset_name} found in the Registry")
        return BLUEPRINTS[asset_name]

    def names(self) -> list[str]:
        return sorted(BLUEPRINTS) + sorted(MATERIALS)


class StrictAirSimApi(AirSimApi):
    """AirSimApi without extensions and with a foreign map's names and assets."""

    def __init__(self, world: World) -> None:
        if world.render_pool is not None:
            raise ConfigError("--strict-airsim renders in the server process: use --render-workers 0")
        super().__init__(world, assets=StrictAssets())
        self.renamed = rename_scene_actors(world)

    def table(self) -> HandlerTable:
        """The stock surface alone: no extension is registered."""
        return self.stock_table()
