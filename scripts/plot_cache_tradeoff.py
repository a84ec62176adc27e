"""Plot the cache-stable trade-off: input cost against mean window size as the low-water mark
varies (no plotting library: the SVG is written directly).

    python scripts/plot_cache_tradeoff.py                       # runs the sweep (a few minutes)
    python scripts/plot_cache_tradeoff.py --from results.json   # from prompt_cache --sweep --json
    python scripts/plot_cache_tradeoff.py --out docs/images/cache-tradeoff.svg

Each line is one kind of session (chat, agent) and one pricing scheme; its points are the
low-water marks of ``select_messages(cache_stable=mark)``; the hollow markers are the
default minimal-fit window (the option off).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

OUT = ROOT / "docs" / "images" / "cache-tradeoff.svg"
WIDTH, HEIGHT = 760, 470
LEFT, RIGHT, TOP, BOTTOM = 70, 190, 50, 60
COLORS = {"chat": "#1f6feb", "agent": "#d1495b"}
DASHES = {"Anthropic": "", "OpenAI": "6 4"}


def _scale(value: float, low: float, high: float, start: float, end: float) -> float:
    return start + (value - low) / (high - low) * (end - start)


def svg(points: Sequence[dict[str, Any]], defaults: Sequence[dict[str, Any]], title: str) -> str:
    """The plot as SVG text: x = mean window (share of the budget), y = input cost
    (multiple of the uncached price)."""
    pricings = [name for name in DASHES if any(name in p["cost"] for p in points)]
    xs = [p["window"] for p in points] + [d["window"] for d in defaults]
    ys = [p["cost"][n] for p in points for n in pricings]
    ys += [d["cost"][n] for d in defaults for n in pricings]
    x_low, x_high = 0.4, 1.0
    x_low = min(x_low, min(xs) - 0.02)
    y_low, y_high = 0.0, max(1.1, max(ys) + 0.05)

    def x(value: float) -> float:
        return _scale(value, x_low, x_high, LEFT, WIDTH - RIGHT)

    def y(value: float) -> float:
        return _scale(value, y_low, y_high, HEIGHT - BOTTOM, TOP)

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="Helvetica, Arial, sans-serif" '
        f'font-size="12">',
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
        f'<text x="{WIDTH / 2:.0f}" y="24" text-anchor="middle" font-size="15" '
        f'font-weight="bold">{title}</text>',
    ]
    # grid and axes
    tick = 0.1
    value = round(x_low + (tick - x_low % tick) % tick, 2)
    while value <= x_high + 1e-9:
        out.append(
            f'<line x1="{x(value):.1f}" y1="{TOP}" x2="{x(value):.1f}" y2="{HEIGHT - BOTTOM}" '
            f'stroke="#e5e5e5"/>'
            f'<text x="{x(value):.1f}" y="{HEIGHT - BOTTOM + 18}" text-anchor="middle">'
            f"{value:.0%}</text>"
        )
        value = round(value + tick, 2)
    value = 0.0
    while value <= y_high + 1e-9:
        out.append(
            f'<line x1="{LEFT}" y1="{y(value):.1f}" x2="{WIDTH - RIGHT}" y2="{y(value):.1f}" '
            f'stroke="#e5e5e5"/>'
            f'<text x="{LEFT - 8}" y="{y(value) + 4:.1f}" text-anchor="end">{value:.1f}x</text>'
        )
        value = round(value + 0.1, 2)
    out.append(
        f'<line x1="{LEFT}" y1="{HEIGHT - BOTTOM}" x2="{WIDTH - RIGHT}" y2="{HEIGHT - BOTTOM}" '
        f'stroke="black"/><line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{HEIGHT - BOTTOM}" '
        f'stroke="black"/>'
    )
    out.append(
        f'<text x="{(LEFT + WIDTH - RIGHT) / 2:.0f}" y="{HEIGHT - 16}" text-anchor="middle">'
        f"mean window (share of the budget)</text>"
        f'<text transform="translate(18 {(TOP + HEIGHT - BOTTOM) / 2:.0f}) rotate(-90)" '
        f'text-anchor="middle">input cost (multiple of the uncached price)</text>'
    )
    # lines: one per kind and pricing
    legend_y = TOP + 10
    for kind, color in COLORS.items():
        mine = sorted((p for p in points if p["kind"] == kind), key=lambda p: p["low_water"])
        if not mine:
            continue
        for name in pricings:
            dash = DASHES[name]
            path = " ".join(
                f"{'M' if i == 0 else 'L'}{x(p['window']):.1f},{y(p['cost'][name]):.1f}"
                for i, p in enumerate(mine)
            )
            dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
            out.append(
                f'<path d="{path}" fill="none" stroke="{color}" stroke-width="2"{dash_attr}/>'
            )
            for p in mine:
                cx, cy = x(p["window"]), y(p["cost"][name])
                out.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="3.5" fill="{color}"/>')
                if name == pricings[0]:
                    out.append(
                        f'<text x="{cx + 5:.1f}" y="{cy - 6:.1f}" font-size="10" '
                        f'fill="{color}">{p["low_water"]:.1f}</text>'
                    )
            for d in (d for d in defaults if d["kind"] == kind):
                cx, cy = x(d["window"]), y(d["cost"][name])
                out.append(
                    f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="5" fill="white" stroke="{color}" '
                    f'stroke-width="2"/>'
                )
            lx = WIDTH - RIGHT + 16
            out.append(
                f'<line x1="{lx}" y1="{legend_y}" x2="{lx + 28}" y2="{legend_y}" stroke="{color}" '
                f'stroke-width="2"{dash_attr}/><text x="{lx + 34}" y="{legend_y + 4}">{kind}, '
                f"{name}</text>"
            )
            legend_y += 20
    lx = WIDTH - RIGHT + 16
    out.append(
        f'<circle cx="{lx + 14}" cy="{legend_y}" r="5" fill="white" stroke="#555" '
        f'stroke-width="2"/><text x="{lx + 34}" y="{legend_y + 4}">option off</text>'
        f'<text x="{lx}" y="{legend_y + 26}" font-size="10">labels: low-water mark</text>'
    )
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--from", dest="source", type=Path, help="a prompt_cache --json file")
    parser.add_argument("--out", type=Path, default=OUT, help=f"default {OUT.relative_to(ROOT)}")
    args = parser.parse_args(argv)
    if args.source is not None:
        data = json.loads(args.source.read_text(encoding="utf-8"))
        points, defaults = data["sweep"], data["sweep_default"]
        budget = data["budget"]
        if not points:
            parser.error(f"{args.source} holds no sweep: run prompt_cache with --sweep")
    else:
        from dataclasses import asdict

        from benchmarks import prompt_cache as pc

        sessions = pc.generate_sessions(pc.SESSIONS, seed=pc.SEED, calls=pc.CALLS, budget=pc.BUDGET)
        swept, rows = pc.sweep(sessions)
        points, defaults = [asdict(p) for p in swept], [asdict(r) for r in rows]
        budget = pc.BUDGET
    title = f"Cache-stable windows: input cost vs window size ({budget:,}-token budget)"
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(svg(points, defaults, title), encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
