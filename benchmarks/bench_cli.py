"""``cupel select --report json`` on many items: time and peak memory against reading the
items alone (issue 28: at most 2x the time, peak memory at most 2x what the items take).

Each side runs in a fresh interpreter with the CLI imported (``ru_maxrss`` is per
process); times are taken in it, after the imports (CPU time is the figure to read on a
shared machine, wall time beside it):

- *read*: the CLI's own input reading, ``cupel.cli._io.read_items(path)`` (parse the JSON
  Lines, build and validate the items);
- *select*: ``python -m cupel.cli select PATH --max-tokens B --report json`` with stdout
  to ``/dev/null`` (the default pipeline, B = 10% of the total tokens).

"What the items take" is the read side's peak RSS minus a bare interpreter's (the same
imports, no items). The input is W3's items (benchmarks/bench_core.py) written as JSON
Lines to a temporary file (never in the repository)::

    python benchmarks/bench_cli.py            # 100,000 items
    python benchmarks/bench_cli.py --million  # 1,000,000 items (a few minutes)
    python benchmarks/bench_cli.py --items 20000 --keep /tmp/items.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
from datetime import timedelta
from pathlib import Path

if __package__ in (None, ""):  # run as a script: the repository root holds the package
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.bench_core import KINDS, SEED, T0, TAGS, _content

ROOT = Path(__file__).resolve().parent.parent

_READ = """
import resource, sys, time
from cupel.cli import _commands
from cupel.cli._io import read_items
cpu, wall = time.process_time(), time.perf_counter()
items = read_items(sys.argv[1]) if len(sys.argv) > 1 else []
cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
print(cpu, wall, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""

_SELECT = """
import resource, sys, time
from cupel.cli import _commands, main
cpu, wall = time.process_time(), time.perf_counter()
status = main(sys.argv[1:])
cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
print(cpu, wall, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)
sys.exit(status)
"""


def write_items(path: str, n: int) -> int:
    """W3's items (seeded) as JSON Lines at ``path``; returns their total tokens."""
    rng = random.Random(SEED + 3 * n)
    total = 0
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(n):
            tokens = rng.randint(20, 200)
            entry: dict[str, object] = {
                "content": _content(rng, i, tokens),
                "tokens": tokens,
                "kind": rng.choice(KINDS),
                "timestamp": (T0 + timedelta(seconds=30 * i)).isoformat().replace("+00:00", "Z"),
            }
            tags = rng.sample(TAGS, rng.randint(0, 3))
            if tags:
                entry["tags"] = tags
            if rng.random() < 0.10:
                entry["priority"] = rng.randint(1, 10)
            fh.write(json.dumps(entry))
            fh.write("\n")
            total += tokens
    return total


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


def read_alone(path: str | None) -> tuple[float, float, int]:
    """CPU and wall seconds and peak RSS (KiB) of reading ``path`` (``None``: nothing,
    the interpreter with the CLI imported)."""
    argv = [sys.executable, "-c", _READ, *([path] if path else [])]
    out = subprocess.run(argv, capture_output=True, text=True, check=True, env=_env())
    cpu, wall, rss = out.stdout.split()
    return float(cpu), float(wall), int(rss)


def select_json(path: str, max_tokens: int) -> tuple[float, float, int, int]:
    """CPU and wall seconds, peak RSS (KiB) and output bytes of
    ``cupel select PATH --max-tokens N --report json``."""
    argv = [sys.executable, "-c", _SELECT, "select", path, "--max-tokens", str(max_tokens)]
    argv += ["--report", "json"]
    with tempfile.TemporaryFile() as sink:
        done = subprocess.run(argv, stdout=sink, stderr=subprocess.PIPE, env=_env(), check=True)
        size = sink.tell()
    cpu, wall, rss = done.stderr.decode().strip().splitlines()[-1].split()
    return float(cpu), float(wall), int(rss), size


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--million", action="store_true", help="1,000,000 items")
    parser.add_argument("--keep", metavar="PATH", help="write (or reuse) the input at PATH")
    args = parser.parse_args(argv)
    n = 1_000_000 if args.million else args.items
    path = args.keep or os.path.join(tempfile.gettempdir(), f"cupel-bench-cli-{n}.jsonl")
    if os.path.exists(path):
        with open(path, encoding="utf-8") as fh:
            total = sum(json.loads(line)["tokens"] for line in fh)
    else:
        total = write_items(path, n)
    budget = total // 10
    try:
        _, _, base_rss = read_alone(None)
        read_cpu, read_wall, read_rss = read_alone(path)
        select_cpu, select_wall, select_rss, size = select_json(path, budget)
    finally:
        if not args.keep:
            os.unlink(path)
    items_mib = (read_rss - base_rss) / 1024
    extra_mib = (select_rss - base_rss) / 1024
    print(f"{n:,} items, --max-tokens {budget:,}, output {size / 2**20:,.1f} MiB")
    print("                          CPU s    wall s    peak MiB beyond the interpreter")
    print(f"  read the items alone  {read_cpu:8.2f}  {read_wall:8.2f}  {items_mib:8.1f}")
    print(f"  select --report json  {select_cpu:8.2f}  {select_wall:8.2f}  {extra_mib:8.1f}")
    print(
        f"  ratio                 {select_cpu / read_cpu:7.2f}x {select_wall / read_wall:8.2f}x "
        f"{extra_mib / items_mib:8.2f}x   (targets: time <= 2x, memory <= 2x)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
