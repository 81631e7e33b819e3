"""CURVE keypairs on disk, in ZeroMQ's certificate format (readable by zmq.auth.load_certificate).

`NAME.key` holds the public key (share it); `NAME.key_secret` holds both keys and is created with
mode 0600 from the start (never chmod-ed afterwards, so it is never readable by others even briefly).
Keys are Z85 text (40 characters), as ZeroMQ's socket options take them.
"""

from __future__ import annotations

import datetime
import os
from dataclasses import dataclass
from pathlib import Path

from common.errors import ConfigError

PUBLIC_SUFFIX = ".key"
SECRET_SUFFIX = ".key_secret"
Z85_KEY_CHARS = 40


@dataclass(frozen=True)
class KeyPair:
    public_key: bytes  # Z85, 40 bytes
    secret_key: bytes | None  # Z85, 40 bytes; None for a public-only certificate
    name: str = ""


@dataclass(frozen=True)
class KeyInfo:
    name: str
    public_key: str
    has_secret: bool
    secret_mode: int | None  # permission bits of the secret file, e.g. 0o600


def _certificate_text(kind: str, public_key: bytes, secret_key: bytes | None) -> str:
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    lines = [
        f"#   ****  Generated on {stamp} by dronecats keys  ****",
        f"#   ZeroMQ CURVE {kind} Certificate",
    ]
    if secret_key is not None:
        lines.append("#   DO NOT PROVIDE THIS FILE TO OTHER USERS nor change its permissions.")
    lines += ["", "metadata", "curve", f'    public-key = "{public_key.decode("ascii")}"']
    if secret_key is not None:
        lines.append(f'    secret-key = "{secret_key.decode("ascii")}"')
    return "\n".join(lines) + "\n"


def _write_new(path: Path, text: str, mode: int, overwrite: bool) -> None:
    flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if overwrite else os.O_EXCL)
    try:
        fd = os.open(path, flags, mode)
    except FileExistsError:
        raise ConfigError(f"{path} already exists (use --force to replace it)") from None
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    os.chmod(path, mode)  # O_TRUNC on an existing file keeps its old mode


def generate_keypair(out_dir: str | Path, name: str, *, overwrite: bool = False) -> tuple[Path, Path]:
    """Write NAME.key (mode 0644) and NAME.key_secret (mode 0600) into out_dir; returns both paths."""
    import zmq

    if not name or "/" in name or name.startswith("."):
        raise ConfigError(f"key name {name!r} must be a plain file name")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    public_key, secret_key = zmq.curve_keypair()
    public_path = out / f"{name}{PUBLIC_SUFFIX}"
    secret_path = out / f"{name}{SECRET_SUFFIX}"
    _write_new(secret_path, _certificate_text("**Secret**", public_key, secret_key), 0o600, overwrite)
    _write_new(public_path, _certificate_text("Public", public_key, None), 0o644, overwrite)
    return public_path, secret_path


def load_keypair(path: str | Path) -> KeyPair:
    """Read a certificate file (public or secret); raises ConfigError naming the file."""
    import zmq.auth

    path = Path(path)
    try:
        public_key, secret_key = zmq.auth.load_certificate(path)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read CURVE certificate {path}: {exc}") from None
    if public_key is None or len(public_key) != Z85_KEY_CHARS:
        raise ConfigError(f"{path} holds no valid public-key (expected {Z85_KEY_CHARS} Z85 characters)")
    if secret_key is not None and len(secret_key) != Z85_KEY_CHARS:
        raise ConfigError(f"{path} holds a secret-key of {len(secret_key)} characters, not {Z85_KEY_CHARS}")
    name = path.name.removesuffix(SECRET_SUFFIX).removesuffix(PUBLIC_SUFFIX)
    return KeyPair(public_key, secret_key, name)


def load_secret_keypair(path: str | Path) -> KeyPair:
    """A secret certificate, refused (as ssh refuses a private key) when group or others may read it:
    whoever reads it can command the drone or impersonate the ground station."""
    pair = load_keypair(path)
    if pair.secret_key is None:
        raise ConfigError(f"{path} is a public certificate; a secret one ({SECRET_SUFFIX}) is needed here")
    check_private(Path(path))
    return pair


def check_private(path: Path) -> None:
    """ConfigError naming the file and the fix when `path` is readable or writable by group or others."""
    mode = path.stat().st_mode & 0o777
    if mode & 0o077:
        raise ConfigError(
            f"secret key {path} is accessible by others (mode {mode:04o}): refusing to use it; "
            f"run `chmod 600 {path}`"
        )


def parse_public_key(value: str | Path) -> bytes:
    """A Z85 public key given as its 40 characters, or as a certificate file holding it."""
    text = str(value)
    if len(text) == Z85_KEY_CHARS and not Path(text).exists():
        import zmq.utils.z85

        try:
            if len(zmq.utils.z85.decode(text)) == 32:
                return text.encode("ascii")
        except (ValueError, KeyError, UnicodeEncodeError):
            pass
        raise ConfigError(f"{text!r} is not a Z85 CURVE public key")
    return load_keypair(text).public_key


def list_keys(directory: str | Path) -> list[KeyInfo]:
    """Every keypair or public key in a directory, by name."""
    root = Path(directory)
    if not root.is_dir():
        raise ConfigError(f"key directory {root} does not exist")
    names = sorted(
        {p.name.removesuffix(SECRET_SUFFIX) for p in root.glob(f"*{SECRET_SUFFIX}")}
        | {p.name.removesuffix(PUBLIC_SUFFIX) for p in root.glob(f"*{PUBLIC_SUFFIX}")}
    )
    infos = []
    for name in names:
        secret_path = root / f"{name}{SECRET_SUFFIX}"
        public_path = root / f"{name}{PUBLIC_SUFFIX}"
        has_secret = secret_path.is_file()
        pair = load_keypair(secret_path if has_secret else public_path)
        mode = secret_path.stat().st_mode & 0o777 if has_secret else None
        infos.append(KeyInfo(name, pair.public_key.decode("ascii"), has_secret, mode))
    return infos
