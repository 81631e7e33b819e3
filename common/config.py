"""Config loading: YAML or TOML files into typed structs, with dotted overrides from the command line.

    cfg = load_config(OnboardConfig, "onboard.yaml", ["safety.geofence_radius_m=80", "rate_hz=50"])

Override values are parsed as YAML scalars (numbers, booleans, lists). Validation errors name the
field path, e.g. "Expected `float`, got `str` - at `$.safety.geofence_radius_m`".
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import msgspec
import yaml

from common.capabilities import DescribesField
from common.errors import ConfigError, DroneCatsError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10 (JetPack 6)
    import tomli as tomllib

T = TypeVar("T")


@contextlib.contextmanager
def file_errors(
    what: str,
    path: str | Path,
    language: str,
    parse_errors: type[Exception] | tuple[type[Exception], ...],
    error: type[DroneCatsError] = ConfigError,
    shown: str | None = None,
) -> Iterator[None]:
    """Reading and parsing a `what` file inside this block fails as one line: "cannot read {what} ..."
    or "{what} {path} is not valid {language}: ..." (`shown` names the file in the first, e.g. as given)."""
    try:
        yield
    except OSError as exc:
        raise error(f"cannot read {what} {path if shown is None else shown}: {exc.strerror}") from None
    except parse_errors as exc:
        raise error(f"{what} {path} is not valid {language}: {exc}") from None


class DuplicateKey(ValueError):
    def __init__(self, message: str, line: int) -> None:
        super().__init__(message)
        self.line = line


class UniqueKeyLoader(yaml.SafeLoader):
    """YAML's safe loader, refusing a key given twice in one mapping. PyYAML keeps the last one
    silently: `geofence_radius_m: 10` then `geofence_radius_m: 100000` flew a 100 km fence, and a
    second `safety:` section replaced the first whole. (TOML refuses duplicates by itself.)"""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            line = key_node.start_mark.line + 1
            if key in seen:
                raise DuplicateKey(f"{key!r} is given twice (first at line {seen[key]}): keep one", line)
            seen[key] = line
        return super().construct_mapping(node, deep=deep)


def read_mapping(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read config {path}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        line = exc.object[: exc.start].count(b"\n") + 1
        raise ConfigError(
            f"config {path} is not UTF-8 text: byte 0x{exc.object[exc.start]:02x} at line {line} "
            f"(offset {exc.start})"
        ) from None
    try:
        data = tomllib.loads(text) if path.suffix == ".toml" else yaml.load(text, Loader=UniqueKeyLoader)
    except DuplicateKey as exc:
        raise ConfigError(f"config {path} line {exc.line}: {exc}") from None
    except (yaml.YAMLError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"config {path} is not valid {path.suffix.lstrip('.') or 'YAML'}: {exc}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"config {path}: top level must be a mapping, got {type(data).__name__}")
    return data


def apply_override(data: dict[str, Any], override: str) -> None:
    """Apply one `dotted.key=value` in place."""
    key, sep, raw = override.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"override {override!r} must look like dotted.key=value")
    try:
        value = yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError:
        value = raw
    parts = key.strip().split(".")
    node = data
    for part in parts[:-1]:
        child = node.get(part)
        if child is None:
            child = node[part] = {}
        elif not isinstance(child, dict):
            raise ConfigError(f"override {override!r}: {part!r} is a value, not a section")
        node = child
    node[parts[-1]] = value


def load_config(
    cls: type[T],
    path: str | Path | None = None,
    overrides: Iterable[str] = (),
    base: dict[str, Any] | None = None,
) -> T:
    data: dict[str, Any] = dict(base or {})
    if path is not None:
        data = _deep_merge(data, read_mapping(path))
    for override in overrides:
        apply_override(data, override)
    try:
        return msgspec.convert(data, cls, strict=False)
    except msgspec.ValidationError as exc:
        where = f" ({path})" if path else ""
        cause = exc.__cause__
        if isinstance(cause, ConfigError) and isinstance(cause, DescribesField):
            # A range check (onboard.config_limits): name the field by its dotted path, e.g.
            # "safety.max_vertical_m_s=-1.5 is out of range: must be 0 < x <= 20 (m/s)".
            section = validation_path(exc)
            raise ConfigError(f"invalid {cls.__name__} config{where}: {cause.describe(section)}") from None
        choices = _enum_choices(cls, validation_path(exc))
        hint = f" (one of {choices})" if choices else ""
        raise ConfigError(f"invalid {cls.__name__} config{where}: {exc}{hint}") from None


def _enum_choices(cls: type, path: str) -> tuple[str, ...]:
    """The accepted values of the enum field at the dotted `path` of `cls`; () when it is not an enum."""
    info: msgspec.inspect.Type = msgspec.inspect.type_info(cls)
    for part in path.split(".") if path else ():
        if not isinstance(info, msgspec.inspect.StructType | msgspec.inspect.DataclassType):
            return ()
        field = next((f for f in info.fields if f.encode_name == part), None)
        if field is None:
            return ()
        info = field.type
        if isinstance(info, msgspec.inspect.UnionType):  # an optional section or field
            info = next((t for t in info.types if not isinstance(t, msgspec.inspect.NoneType)), info)
    if isinstance(info, msgspec.inspect.EnumType):
        return tuple(str(member.value) for member in info.cls)
    return ()


_AT = " - at `$"


def validation_path(exc: msgspec.ValidationError) -> str:
    """Where a msgspec validation error happened, as a dotted path ("safety", "" for the top level).

    msgspec carries the location only in its message text ("... - at `$.safety`"): ValidationError
    has no path attribute (msgspec issues #264 and #1158 ask for one, open), so this is the one place
    that reads it, and tests/common/test_common.py pins the format."""
    text = str(exc)
    if _AT not in text:
        return ""
    return text.rpartition(_AT)[2].rstrip("`").lstrip(".")


def _deep_merge(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    out = dict(a)
    for key, value in b.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = value
    return out
