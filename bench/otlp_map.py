"""In-process cost of the OTLP trace receiver's Python side, per span, for two code trees.

    .venv/bin/python bench/otlp_map.py [--compare /path/to/old/tree] [--pairs 3]

Times what the server runs for one ``ExportTraceServiceRequest`` before its DB write:
the protobuf decode, the span mapping and the event sort of ``app.otlp.service``, on the
batches ``bench/ingest_otlp.py`` sends (same builders, same seed). ``µs/span`` is the
median over ``--rounds`` rounds of every batch, in CPU time of the process
(``time.process_time``): on a shared machine wall time also counts the time the process
waits for a core, which says more about the neighbours than about the code; the wall-time
total (``time.perf_counter``) is reported beside it. With ``--compare``, each run is a child
process with ``PYTHONPATH`` set to one tree (this one, or the other), run alternately
``--pairs`` times, so the ratio holds on a shared, noisy machine better than two separate
figures would. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import pickle
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def _bodies(spans: int, batch: int) -> list[bytes]:
    sys.path.insert(0, str(ROOT))
    from bench.ingest_otlp import span_batch

    rng = random.Random(0)  # repeat 0 of bench/ingest_otlp.py
    return [span_batch(1, b, batch, rng) for b in range(spans // batch)]


def _child(bodies_file: str, rounds: int) -> dict[str, Any]:
    """Time this process's ``app`` (from PYTHONPATH) on the pickled bodies."""
    import app
    from app.otlp.decode import decode_protobuf
    from app.otlp.mapping import map_spans

    bodies: list[bytes] = pickle.loads(Path(bodies_file).read_bytes())
    clock = time.process_time
    decode_us, map_us, total_us, wall_us = [], [], [], []
    spans = 0
    for _ in range(rounds + 1):  # the first round warms caches and is dropped
        gc.collect()
        t_decode = t_map = t_sort = 0.0
        spans = 0
        wall = time.perf_counter()
        for body in bodies:
            t0 = clock()
            decoded = decode_protobuf(body)
            t1 = clock()
            mapped = map_spans(decoded)
            t2 = clock()
            # What app.otlp.service.export_traces does before taking a write slot.
            sorted(mapped.events, key=lambda ev: ev.event_id)
            {t["trace_id"] for t in mapped.traces}
            t3 = clock()
            t_decode, t_map, t_sort = t_decode + t1 - t0, t_map + t2 - t1, t_sort + t3 - t2
            spans += len(decoded)
        wall_us.append((time.perf_counter() - wall) / spans * 1e6)
        decode_us.append(t_decode / spans * 1e6)
        map_us.append(t_map / spans * 1e6)
        total_us.append((t_decode + t_map + t_sort) / spans * 1e6)
    med = statistics.median
    return {
        "tree": str(Path(app.__file__).resolve().parent.parent),
        "spans": spans,
        "decode_us_per_span": round(med(decode_us[1:]), 2),
        "map_us_per_span": round(med(map_us[1:]), 2),
        "total_us_per_span": round(med(total_us[1:]), 2),
        "wall_us_per_span": round(med(wall_us[1:]), 2),
    }


def _run_tree(tree: Path, bodies_file: str, rounds: int) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=str(tree))
    cmd = [sys.executable, __file__, "--child", bodies_file, "--rounds", str(rounds)]
    done = subprocess.run(cmd, env=env, cwd=tree, capture_output=True, text=True, check=True)
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--spans", type=int, default=20_000)
    p.add_argument("--batch", type=int, default=500)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--compare", type=Path, help="another tree to time, alternately")
    p.add_argument("--pairs", type=int, default=3, help="alternating runs of each tree")
    p.add_argument("--child", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        print(json.dumps(_child(args.child, args.rounds)))
        return
    with tempfile.NamedTemporaryFile(suffix=".pickle") as f:
        f.write(pickle.dumps(_bodies(args.spans, args.batch)))
        f.flush()
        trees = [ROOT] if args.compare is None else [args.compare.resolve(), ROOT]
        runs: dict[str, list[dict[str, Any]]] = {str(t): [] for t in trees}
        for _ in range(args.pairs if args.compare else 1):
            for tree in trees:
                runs[str(tree)].append(_run_tree(tree, f.name, args.rounds))
    out: dict[str, Any] = {"spans": args.spans, "batch": args.batch, "rounds": args.rounds}
    for tree, results in runs.items():
        assert all(r["tree"] == tree for r in results), "PYTHONPATH did not pick the tree"
        out[tree] = {
            "total_us_per_span": [r["total_us_per_span"] for r in results],
            "median_wall_us_per_span": statistics.median(r["wall_us_per_span"] for r in results),
            "median_total_us_per_span": statistics.median(r["total_us_per_span"] for r in results),
            "median_decode_us_per_span": statistics.median(
                r["decode_us_per_span"] for r in results
            ),
            "median_map_us_per_span": statistics.median(r["map_us_per_span"] for r in results),
        }
    if args.compare is not None:
        old, new = (out[str(t)]["median_total_us_per_span"] for t in trees)
        out["ratio_new_over_old"] = round(new / old, 3)
    out["load_average_1m"] = round(os.getloadavg()[0], 2)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
