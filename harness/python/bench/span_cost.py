#!/usr/bin/python3
"""The cost of one recorded span inside a DataLoader worker: a dataset's __getitem__ called
through pipeprof.watch's wrapper (two clock reads and a spool append) against the same call
unwrapped, in this process, many times; the difference per call is the span's cost.

    PYTHONPATH=build/python python3 harness/python/bench/span_cost.py [--calls N]
"""

import argparse
import sys
import tempfile
import time

from pipeprof import _torch_hooks


class Items:
    def __len__(self):
        return 1 << 30

    def __getitem__(self, i):
        return i


def per_call_ns(get, calls):
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter_ns()
        for i in range(calls):
            get(i)
        best = min(best, (time.perf_counter_ns() - t0) / calls)
    return best


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=200_000)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as d:
        rec = _torch_hooks._WorkerRecorder(d, 0)
        plain = Items()
        timed = _torch_hooks._TimedMap(plain, rec)
        raw = per_call_ns(plain.__getitem__, args.calls)
        wrapped = per_call_ns(timed.__getitem__, args.calls)
        rec.spool.flush()
        print(f"__getitem__ {raw:.0f} ns plain, {wrapped:.0f} ns recorded: {wrapped - raw:.0f} ns "
              f"per span ({rec.spool.events} spans written)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
