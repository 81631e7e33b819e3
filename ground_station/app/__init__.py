"""The PyQt6 ground-station app: fleet tiles, control-tower map, instructions, orders, declarations,
safety controls. All fleet logic lives in ground_station.fleet; this package only shows and asks."""
