"""Printable checkerboards: a PDF page at true scale (A4 or Letter) and a PNG of the board itself.

The board is (cols + 1) x (rows + 1) squares for a pattern of cols x rows INNER corners, black in the
top-left corner, on white all round (the quiet zone the corner detector needs: the paper's margin on
the page, one square of white in the PNG). The PNG has exactly the simulator board's layout, so it
can also be textured onto the built-in simulator's checkerboard (`dronecats calibrate --sim-board
--sim-board-image board.png`); it carries its DPI so that an image
viewer prints it at the same scale.

The PDF draws the squares as vector rectangles in millimetres, plus a 50 mm scale bar and a caption
with the pattern and square size: print it at 100% ("actual size", never "fit to page") and check
the bar with a ruler before calibrating; the square size passed to `dronecats calibrate` must be
what was printed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from calibration.pattern import BoardPattern
from common.errors import ConfigError

PAGES_MM = {"a4": (210.0, 297.0), "letter": (215.9, 279.4)}  # width, height (portrait)
PRINTER_MARGIN_MM = 10.0  # what most printers cannot reach, each edge
CAPTION_MM = 14.0  # room under the board for the scale bar and the caption
SCALE_BAR_MM = 50.0
MM_PER_INCH = 25.4


@dataclass(frozen=True)
class PageLayout:
    page: str
    width_mm: float
    height_mm: float
    squares_x_mm: float  # lower-left corner of the squares, from the page's lower-left corner, y up
    squares_y_mm: float  # (PDF convention); the paper around them is the white margin

    @property
    def landscape(self) -> bool:
        return self.width_mm > self.height_mm


def squares_size_mm(pattern: BoardPattern) -> tuple[float, float]:
    """Width and height of the squares: (cols + 1) x (rows + 1) of them."""
    return (pattern.cols + 1) * pattern.square_mm, (pattern.rows + 1) * pattern.square_mm


def board_image(pattern: BoardPattern, px_per_square: int) -> np.ndarray:
    """The board as a grey image (uint8): (cols + 1) x (rows + 1) squares on a one-square margin."""
    if px_per_square < 4:
        raise ConfigError(f"{px_per_square} px per square: at least 4")
    cols, rows = pattern.cols + 1, pattern.rows + 1
    image = np.full(((rows + 2) * px_per_square, (cols + 2) * px_per_square), 255, np.uint8)
    for r in range(rows):
        for c in range(cols):
            if (r + c) % 2 == 0:
                y0, x0 = (r + 1) * px_per_square, (c + 1) * px_per_square
                image[y0 : y0 + px_per_square, x0 : x0 + px_per_square] = 0
    return image


def layout(pattern: BoardPattern, page: str) -> PageLayout:
    """The squares centred above the caption, turned to landscape when they fit only that way. The
    printer's margin (10 mm) is the white quiet zone around them."""
    if page not in PAGES_MM:
        raise ConfigError(f"page {page!r}: choose {', '.join(PAGES_MM)}")
    board_w, board_h = squares_size_mm(pattern)
    portrait = PAGES_MM[page]
    for width, height in (portrait, portrait[::-1]):
        free_w, free_h = width - 2 * PRINTER_MARGIN_MM, height - 2 * PRINTER_MARGIN_MM - CAPTION_MM
        if board_w <= free_w and board_h <= free_h:
            x = (width - board_w) / 2
            y = PRINTER_MARGIN_MM + CAPTION_MM + (free_h - board_h) / 2
            return PageLayout(page, width, height, x, y)
    long_side, short_side = max(portrait), min(portrait)
    fits_mm = min(
        (long_side - 2 * PRINTER_MARGIN_MM) / (pattern.cols + 1),
        (short_side - 2 * PRINTER_MARGIN_MM - CAPTION_MM) / (pattern.rows + 1),
    )
    raise ConfigError(
        f"a {pattern.label} board of {pattern.square_mm:g} mm squares is {board_w:g} x {board_h:g} mm: it "
        f"does not fit on {page.upper()}; at most {int(fits_mm * 10) / 10:g} mm squares do"
    )


def write_pdf(pattern: BoardPattern, path: Path, page: str = "a4") -> PageLayout:
    """One page, true scale: vector squares, a scale bar and a caption."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    where = layout(pattern, page)
    fig = plt.figure(figsize=(where.width_mm / MM_PER_INCH, where.height_mm / MM_PER_INCH))
    try:
        ax = fig.add_axes((0.0, 0.0, 1.0, 1.0))
        ax.set_xlim(0, where.width_mm)
        ax.set_ylim(0, where.height_mm)
        ax.axis("off")
        sq = pattern.square_mm
        cols, rows = pattern.cols + 1, pattern.rows + 1
        top = where.squares_y_mm + rows * sq
        for r in range(rows):
            for c in range(cols):
                if (r + c) % 2 == 0:  # black in the top-left corner, as in the PNG
                    x, y = where.squares_x_mm + c * sq, top - (r + 1) * sq
                    ax.add_patch(Rectangle((x, y), sq, sq, facecolor="black", edgecolor="none", lw=0))
        bar_y = PRINTER_MARGIN_MM + 8.0
        bar_x = where.squares_x_mm
        ax.add_patch(Rectangle((bar_x, bar_y), SCALE_BAR_MM, 1.5, facecolor="black", edgecolor="none"))
        ax.text(bar_x + SCALE_BAR_MM + 3, bar_y + 0.75, f"{SCALE_BAR_MM:g} mm", va="center", fontsize=8)
        ax.text(
            bar_x,
            PRINTER_MARGIN_MM + 2.0,
            f"DroneCATS calibration board: {pattern.label} inner corners, {sq:g} mm squares. Print at "
            f"100% (actual size); check the bar, then: dronecats calibrate --pattern {pattern.label} "
            f"--square-mm {sq:g}",
            fontsize=7,
        )
        fig.savefig(path, format="pdf")
    finally:
        plt.close(fig)
    return where


def write_png(pattern: BoardPattern, path: Path, dpi: float = 300.0) -> float:
    """The board alone at `dpi` (whole pixels per square); returns the printed square size in mm."""
    from PIL import Image

    if not 50 <= dpi <= 2400:
        raise ConfigError(f"--dpi {dpi:g}: 50-2400")
    px_per_square = max(4, round(dpi * pattern.square_mm / MM_PER_INCH))
    Image.fromarray(board_image(pattern, px_per_square)).save(path, dpi=(dpi, dpi))
    return px_per_square * MM_PER_INCH / dpi
