"""`dronecats keys generate --out DIR --name NAME` and `dronecats keys list DIR`: CURVE keypairs."""

from __future__ import annotations

import argparse
import json
import sys

from common.checks import writable_dir
from common.errors import ConfigError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="keys_command", metavar="ACTION", required=True)
    gen = sub.add_parser("generate", help="write NAME.key (public) and NAME.key_secret (mode 0600)")
    gen.add_argument("--out", required=True, help="directory to write into (created if missing)")
    gen.add_argument("--name", required=True, help="key name, e.g. gs1 or drone1")
    gen.add_argument("--force", action="store_true", help="replace an existing keypair of that name")
    lst = sub.add_parser("list", help="list the keys in a directory")
    lst.add_argument("directory", help="the directory generate wrote into")
    lst.add_argument("--json", action="store_true", help="one JSON object per line")


def run(args: argparse.Namespace) -> int:
    from common import keys

    try:
        if args.keys_command == "generate":
            out = writable_dir(args.out, "--out")  # a file in the way, no such parent, read-only
            public_path, secret_path = keys.generate_keypair(out, args.name, overwrite=args.force)
            pair = keys.load_keypair(public_path)
            print(f"public  {public_path}")
            print(f"secret  {secret_path} (mode 0600)")
            print(f"public-key {pair.public_key.decode('ascii')}")
            return 0
        infos = keys.list_keys(args.directory)
    except ConfigError as exc:
        print(f"dronecats keys: {exc}", file=sys.stderr)
        return 2
    for info in infos:
        mode = None if info.secret_mode is None else f"{info.secret_mode:04o}"
        if args.json:
            record = {"name": info.name, "public_key": info.public_key, "has_secret": info.has_secret}
            print(json.dumps({**record, "secret_mode": mode}))
        else:
            kind = f"keypair (secret mode {mode})" if info.has_secret else "public only"
            warn = (
                "  WARNING: secret readable by others"
                if info.has_secret and info.secret_mode and (info.secret_mode & 0o077)
                else ""
            )
            print(f"{info.name:<16} {info.public_key}  {kind}{warn}")
    return 0
