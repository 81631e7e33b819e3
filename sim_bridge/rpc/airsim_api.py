"""AirSim 1.8.1's RPC surface (its wire names and struct encodings) over a `World`, built from one
object per AirSim API family.

The families follow AirSim's own grouping: AirLib's RpcLibServerBase.cpp (the calls of every
vehicle server), MultirotorRpcLibServer.cpp (the multirotor's) and CarRpcLibServer.cpp, as
PythonClient/airsim/client.py groups them for a client (microsoft/AirSim):

- session_api: connection, versions, reset, vehicles, API control, arming, pause and time
- multirotor_api, attitude_api: takeoff, land, hover, moveBy*, moveTo*, rotations, RC, gains
- vehicle_api: vehicle pose, ground-truth kinematics and environment, collisions, home point
- world_api, segmentation: scene objects (poses, spawn, destroy, assets, materials, extents, line
  of sight) and segmentation IDs
- images_api, camera_api, detection_api: images, camera info/pose/FOV/distortion, detections
- sensor_api: IMU, barometer, magnetometer, GPS, distance sensors, lidar
- weather_api: wind, weather, trace lines
- car_api: SimMode Car's server, from this stock table; extensions: the built-in `dc*` methods

Each family names its RPC methods in an explicit `handlers()` table; `AirSimApi` builds the
server's table from them (sim_bridge.rpc.dispatch: a name served twice is an error at start).
Shared state (the world, the vehicles' frames, segmentation IDs, lenses, effects, sensors) is made
here once and handed to each family that needs it. None of AirSim's recording calls is served.

Vehicle APIs use each vehicle's spawn-relative NED frame (axes aligned with the world's); object APIs
use the world NED frame, as AirSim does (sim_bridge.rpc.local_frames). Struct dicts use exactly the
airsim client's attribute names (sim_bridge.rpc.wire).

Both client generations are served: the server version is 4 (Cosys-AirSim's), the minimum client
version 1 (AirSim 1.x), and methods whose argument count differs between them (simGetImages,
simGetCameraInfo, simGetObjectPose) take either; the last argument of the detection and image calls is
AirSim 1.x's `external` bool or Cosys's `annotation_name` string, both ignored (one camera per drone).
"""

from __future__ import annotations

from common.errors import VehicleError
from common.pose import Pose
from sim_bridge.rpc.attitude_api import AttitudeApi
from sim_bridge.rpc.camera_api import CameraApi, Lenses
from sim_bridge.rpc.camera_select import CameraSelect
from sim_bridge.rpc.cameras import CameraRig
from sim_bridge.rpc.collisions import Collisions
from sim_bridge.rpc.detection_api import DetectionApi
from sim_bridge.rpc.dispatch import HandlerTable, RpcFamily, dispatch_table, family_tables
from sim_bridge.rpc.distance import DistanceService
from sim_bridge.rpc.extensions import EXTENSIONS, DcExtensions, FrameRing, WorldEffects
from sim_bridge.rpc.images_api import ImagesApi
from sim_bridge.rpc.lidar import LidarService
from sim_bridge.rpc.local_frames import LocalFrames, geo_point
from sim_bridge.rpc.manual import ManualFlight
from sim_bridge.rpc.multirotor_api import MultirotorApi
from sim_bridge.rpc.segmentation import SegmentationApi, SegmentationIds, segmentation_colour
from sim_bridge.rpc.sensor_api import SensorApi
from sim_bridge.rpc.sensors import SensorService
from sim_bridge.rpc.session_api import SessionApi
from sim_bridge.rpc.silence import SilenceLanding
from sim_bridge.rpc.vehicle_api import VehicleStateApi
from sim_bridge.rpc.weather_api import WeatherApi
from sim_bridge.rpc.wire import parse_pose, parse_vec3
from sim_bridge.rpc.world_api import AssetCatalogue, WorldObjectsApi
from sim_bridge.settings_sections import CameraSetting, VehicleSections
from sim_bridge.sim.world import World


class AirSimApi:
    """The composition root of the stock surface: its shared state and families; `table()` gives
    name -> callable for the RPC server."""

    def __init__(
        self, world: World, truth_render: str = "crop", assets: AssetCatalogue | None = None
    ) -> None:
        self.world = world
        self.frames = FrameRing()  # the forward camera's frames served, for dcPointOnTargetInFrame
        self.effects = WorldEffects()
        self.silence = SilenceLanding(world)  # --land-on-silence-s and dcSetSilenceLanding
        self.extensions = DcExtensions(world, self.frames, self.effects, self.silence, truth_render)
        local = LocalFrames(world)
        self.segmentation = SegmentationIds(world)
        self._lidars = LidarService(world)
        self._cameras = CameraRig(world)
        # IMU, barometer, magnetometer, GPS and the distance sensors' noise (rpc/sensors.py)
        self.sensors = SensorService(world, lambda x, y, z: geo_point(Pose(x, y, z, 0.0)))
        self._distance = DistanceService(world, self.sensors)
        manual = ManualFlight(world)
        collisions = Collisions(world, self.segmentation.of_body)
        select = CameraSelect(local, self._cameras)
        lenses = Lenses()  # simSetDistortionParam (rpc/lens.py)
        self.session = SessionApi(
            local, collisions, manual, self._lidars, self.sensors, self.silence, self.effects
        )
        self.multirotor = MultirotorApi(local, manual)
        self.attitude = AttitudeApi(local)
        self.vehicle = VehicleStateApi(local, collisions)
        self.objects = WorldObjectsApi(world, self.segmentation, assets)
        self.segmentation_api = SegmentationApi(self.segmentation)
        self.images = ImagesApi(local, select, lenses, self.segmentation, self.frames)
        self.camera = CameraApi(local, select, lenses)
        self.detection = DetectionApi(local, select)
        self.sensor_api = SensorApi(self.sensors, self._distance, self._lidars, self.segmentation)
        self.weather = WeatherApi(local, self.effects)

    def families(self) -> list[RpcFamily]:
        """The stock surface's families, in AirSim's order (RpcLibServerBase, then the multirotor's)."""
        return [
            self.session,
            self.vehicle,
            self.objects,
            self.segmentation_api,
            self.images,
            self.camera,
            self.detection,
            self.sensor_api,
            self.weather,
            self.multirotor,
            self.attitude,
        ]

    def apply_settings(
        self, sections: dict[str, VehicleSections], external_cameras: dict[str, CameraSetting] | None = None
    ) -> None:
        """What settings.json gives each vehicle beyond its pose, and its ExternalCameras
        (sim_bridge.settings_sections)."""
        self._cameras.configure_external(external_cameras or {})
        for vehicle, sec in sections.items():
            self.world.vehicle(str(vehicle))  # the settings' vehicles are the world's
            self._lidars.configure(vehicle, sec.lidars)
            self._cameras.configure(vehicle, sec.cameras)
            self._distance.configure(vehicle, sec.distance_sensors)
            self.sensors.configure(vehicle, sec.sensors, sec.sensor_params)

    def stock_table(self) -> HandlerTable:
        """Name -> handler of AirSim's stock methods (every family's explicit table)."""
        return dispatch_table(family_tables(self.families()))

    def table(self) -> HandlerTable:
        """What the RPC server registers: the stock surface and, beside it, the extensions."""
        return dispatch_table([*family_tables(self.families()), ("DcExtensions", self.extensions.table())])


__all__ = [
    "EXTENSIONS",
    "AirSimApi",
    "VehicleError",
    "parse_pose",
    "parse_vec3",
    "segmentation_colour",
]
