#!/usr/bin/python3
"""pipeprof.Pipeline against torch's DataLoader on the same npz files, with the same threads.

Both read each file's array 'x' (DLIO's npz layout, as `pipeprof datagen` writes it) and hand a
PyTorch loop batches of torch tensors: pipeprof through pipeprof.torch_dataset (its interleave of
`threads` readers, batch, prefetch), DataLoader with `threads` worker processes whose Dataset
np.load()s a file per sample. The loop does nothing but take the batches (the loader's ceiling)
and touch one byte of each; the figure is samples/s, best of the repetitions, side by side.

Both look equally far ahead: DataLoader keeps prefetch_factor (2) batches per worker in flight,
threads x 2 x batch samples; the interleave keeps its cycle_length files open, each pulled up to
2 samples ahead, so its cycle_length is threads x batch (the same number of samples), while only
`threads` of them are read at a time.

    pipeprof datagen --workload harness/workloads/npz_256k.yaml --num-files-train 2048
    PYTHONPATH=build/python python3 harness/python/bench/pipeline_bench.py data/npz_256k/train [--threads 2]
"""

import argparse
import glob
import json
import os
import sys
import time

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

import pipeprof


class NpzFiles(Dataset):
    def __init__(self, files):
        self.files = files

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        with np.load(self.files[i]) as z:
            return torch.from_numpy(z["x"])


def consume(loader, limit):
    samples = 0
    t0 = time.perf_counter()
    for batch in loader:
        samples += batch.shape[0]
        _ = int(batch.reshape(-1)[0])
        if samples >= limit:
            break
    return samples / (time.perf_counter() - t0)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", help="a folder of .npz files")
    ap.add_argument("--threads", type=int, default=2, help="reader threads / DataLoader workers")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--samples", type=int, default=2048, help="samples per measurement")
    ap.add_argument("--repetitions", type=int, default=3)
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args(argv)
    files = sorted(glob.glob(os.path.join(args.folder, "*.npz")))
    if not files:
        print(f"pipeline_bench: no .npz file in {args.folder}", file=sys.stderr)
        return 2
    prefetch_factor = 2  # DataLoader's default, given below so that the two stay equal
    cycle_length = args.threads * prefetch_factor * args.batch // 2  # 2: each slot's buffer
    spec = {"stages": [
        {"op": "list_files", "files": files, "shuffle": False},
        {"op": "interleave", "cycle_length": cycle_length, "parallelism": args.threads,
         "pipeline": {"stages": [{"op": "npz", "file": "$element", "keys": ["x"]}]}},
        {"op": "batch", "batch_size": args.batch, "drop_remainder": True},
        {"op": "prefetch", "buffer_size": 2}]}
    results = {"pipeprof": [], "dataloader": []}
    for _ in range(args.repetitions):
        ours = DataLoader(pipeprof.torch_dataset(spec), batch_size=None)
        results["pipeprof"].append(consume(ours, args.samples))
        theirs = DataLoader(NpzFiles(files), batch_size=args.batch, num_workers=args.threads,
                            prefetch_factor=prefetch_factor, drop_last=True)
        results["dataloader"].append(consume(theirs, args.samples))
    best = {k: max(v) for k, v in results.items()}
    ratio = best["pipeprof"] / best["dataloader"]
    print(f"{len(files)} files, {args.threads} threads, batch {args.batch}, "
          f"{cycle_length} files open: pipeprof.Pipeline "
          f"{best['pipeprof']:.0f} samples/s, DataLoader {best['dataloader']:.0f} samples/s: "
          f"{ratio:.2f}x (runs: {results})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"results": results, "best": best, "ratio": ratio, "threads": args.threads,
                       "cycle_length": cycle_length, "prefetch_factor": prefetch_factor,
                       "cpus": len(os.sched_getaffinity(0))}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
