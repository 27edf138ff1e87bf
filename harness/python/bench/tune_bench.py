#!/usr/bin/python3
"""pipeprof.tune against the full grid, on three loaders with different bottlenecks.

For each loader the whole grid is measured once (the reference), then pipeprof.tune's hill
climbing runs with a third of the grid's trials. The figure is the grid's samples/s at the point
tune chose over the grid's best (1.0: tune found the optimum), both measured in the same run.

    PYTHONPATH=build/python python3 harness/python/bench/tune_bench.py [--batches N] [--json out.json]
"""

import argparse
import json
import os
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset

import pipeprof


def spin(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


class Samples(Dataset):
    def __init__(self, getitem_s=0.0, cpu_s=0.0):
        self.getitem_s, self.cpu_s = getitem_s, cpu_s

    def __len__(self):
        return 1_000_000

    def __getitem__(self, i):
        if self.getitem_s:
            time.sleep(self.getitem_s)  # a read that waits on storage
        if self.cpu_s:
            spin(self.cpu_s)
        return torch.zeros(64)


def slow_collate(samples):
    spin(0.0002 * len(samples))  # per-sample CPU work in the collate
    return torch.stack(samples)


LOADERS = {
    # Reads that wait: more workers and deeper prefetch help, far beyond the CPU count.
    "slow __getitem__": (lambda: Samples(getitem_s=0.003), None, None),
    # CPU work in collate_fn: workers help up to the CPU count.
    "slow collate": (lambda: Samples(), slow_collate, None),
    # A fast loader behind a slow step: one worker keeps up; more only cost.
    "few workers": (lambda: Samples(), None, lambda batch: spin(0.006)),
}

SPACE = {"num_workers": [0, 1, 2, 4, 6], "prefetch_factor": [1, 2, 4], "batch_size": [8, 16, 32]}


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", type=int, default=10, help="timed batches per trial")
    ap.add_argument("--repeats", type=int, default=1, help="hill climbing's measurements per point")
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args(argv)
    out = {"cpus": len(os.sched_getaffinity(0)), "torch": torch.__version__, "loaders": []}
    for name, (dataset, collate, step) in LOADERS.items():
        def make(num_workers, prefetch_factor, batch_size, dataset=dataset, collate=collate):
            extra = {"prefetch_factor": prefetch_factor} if num_workers > 0 else {}
            return DataLoader(dataset(), batch_size=batch_size, num_workers=num_workers,
                              collate_fn=collate, **extra)

        quiet = open(os.devnull, "w")
        grid = pipeprof.tune(make, SPACE, step, batches=args.batches, strategy="grid", file=quiet)
        by_point = {tuple(sorted(t.settings.items())): t.samples_per_s for t in grid.trials if t.ok}
        grid_best = max(by_point.values())
        hill = pipeprof.tune(make, SPACE, step, batches=args.batches, strategy="hill",
                             budget=grid.grid_size // 3, repeats=args.repeats, file=quiet)
        chosen = by_point[tuple(sorted(hill.best.items()))]
        row = {"loader": name, "grid_points": grid.grid_size, "grid_best": grid.best,
               "grid_best_samples_per_s": grid_best, "tune_trials": len(hill.trials),
               "tune_best": hill.best, "tune_best_in_grid_samples_per_s": chosen,
               "ratio": chosen / grid_best}
        out["loaders"].append(row)
        print(f"{name:18} grid best {grid.best} {grid_best:8.0f} samples/s; tune ({len(hill.trials)} "
              f"trials of {grid.grid_size}) chose {hill.best}: {chosen:8.0f} samples/s in the grid "
              f"= {chosen / grid_best:.3f} of the optimum", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
