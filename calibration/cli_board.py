"""`dronecats calibrate-board --pattern 9x6 --square-mm 25 --out board.pdf [--page a4|letter]`: a
checkerboard to print at true scale (PDF) and the same board as a PNG next to it (board.png), which
`dronecats calibrate --sim-board --sim-board-image board.png` can texture onto the simulator's board.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--pattern", required=True, help="COLSxROWS counted in INNER corners, e.g. 9x6 (a 10x7-square board)"
    )
    parser.add_argument("--square-mm", type=float, required=True, help="side of one printed square, mm")
    parser.add_argument("--out", required=True, help="the PDF to write (the PNG goes next to it)")
    parser.add_argument("--page", default="a4", choices=["a4", "letter"], help="paper size (default a4)")
    parser.add_argument("--dpi", type=float, default=300.0, help="the PNG's resolution (default 300)")


def run(args: argparse.Namespace) -> int:
    from calibration.board import write_pdf, write_png
    from calibration.pattern import BoardPattern
    from common.errors import ConfigError

    out = Path(args.out)
    try:
        if not math.isfinite(args.square_mm) or not math.isfinite(args.dpi):
            raise ConfigError("--square-mm and --dpi must be finite numbers")
        if out.suffix.lower() != ".pdf":
            raise ConfigError(f"--out {out}: a .pdf file (the PNG is written next to it)")
        pattern = BoardPattern.parse(args.pattern, args.square_mm)
        out.parent.mkdir(parents=True, exist_ok=True)
        where = write_pdf(pattern, out, args.page)
        png = out.with_suffix(".png")
        png_square_mm = write_png(pattern, png, args.dpi)
    except (ConfigError, OSError) as exc:
        print(f"dronecats calibrate-board: {exc}", file=sys.stderr)
        return 2
    orientation = "landscape" if where.landscape else "portrait"
    print(
        f"wrote {out} ({args.page.upper()} {orientation}: print at 100%, check the 50 mm bar) and {png} "
        f"({png_square_mm:.3f} mm squares at {args.dpi:g} dpi)",
        file=sys.stderr,
    )
    print(
        json.dumps(
            {
                "pdf": str(out),
                "png": str(png),
                "pattern": pattern.label,
                "square_mm": pattern.square_mm,
                "page": args.page,
                "orientation": orientation,
                "png_square_mm": round(png_square_mm, 4),
            }
        )
    )
    return 0
