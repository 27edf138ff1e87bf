#!/usr/bin/python3
"""pipeprof's PyTorch peer: a DLIO workload's training run through torch.utils.data.DataLoader.

It runs the same npz workload file as `pipeprof workload`, the way DLIO's PyTorch path reads it:
each simulated accelerator is a process with its own DataLoader over a contiguous range of sample
indices (DLIO's split), whose Dataset loads a sample with np.load(file)['x'][..., i] and returns
DLIO's fixed stand-in image; num_workers = read_threads, prefetch_factor = ceil(prefetch_size /
read_threads) (2 when that is 0), drop_last, persistent workers. The step is the same emulated
one: a sleep of train.computation_time, then the barrier DLIO uses to simulate the allreduce. AU
and throughput are computed as DLIO computes them, and the run is written in pipeprof's results
format (schema 3), so `pipeprof compare` and `pipeprof report` put it beside pipeprof's own run.

    harness/peers/pytorch_dataloader.py WORKLOAD.yaml [overrides] [--accelerators N]
        [--find-max-accelerators] [--scale F] [--out results.json]

Exit status: 0 ok, 1 a run failed, 2 bad input (the workload file, an override, missing files),
130 interrupted (what was measured is written).
"""

import argparse
import json
import multiprocessing as mp
import os
import signal
import statistics
import sys
import threading
import time

import numpy as np

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from dlio_workload import (InputError, environment, experiment, load_workload, metrics,
                           sleep_overshoot, steps_per_epoch, training_files)

try:
    import torch
    from torch.utils.data import DataLoader, Dataset, Sampler
except ImportError:  # pragma: no cover - reported to the user
    sys.stderr.write("pytorch_dataloader: python3-torch is not installed (apt-get install python3-torch)\n")
    sys.exit(2)


class NpzSamples(Dataset):
    """DLIO's TorchDataset over its NPZ reader: np.load per sample (read_type on_demand)."""

    def __init__(self, files, samples_per_file, max_dimension, preprocess, seed):
        self.files, self.nspf = files, samples_per_file
        self.preprocess, self.seed = preprocess, seed
        self.image = np.random.default_rng(seed).integers(0, 255, size=(max_dimension, max_dimension),
                                                          dtype=np.uint8)
        self.rng = None

    def __len__(self):
        return len(self.files) * self.nspf

    def __getitem__(self, index):
        if self.rng is None:
            info = torch.utils.data.get_worker_info()
            self.rng = np.random.default_rng(self.seed * 1000 + (info.id if info else 0))
        x = np.load(self.files[index // self.nspf])["x"]
        _ = x[..., index % self.nspf]
        t = self.preprocess(self.rng)
        if t > 0:
            time.sleep(t)
        return self.image


class ContiguousSampler(Sampler):
    """DLIO's sampler: rank r reads samples [r * floor(N / P), (r + 1) * floor(N / P))."""

    def __init__(self, total, rank, ranks):
        per_rank = total // ranks
        self.begin, self.end = rank * per_rank, (rank + 1) * per_rank

    def __iter__(self):
        return iter(range(self.begin, self.end))

    def __len__(self):
        return self.end - self.begin


def normal_priority(_worker_id=None):
    """A DataLoader worker runs at the normal priority (it inherits its accelerator's)."""
    if os.sched_getscheduler(0) != os.SCHED_OTHER:
        os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))


def accelerator(rank, ranks, w, files, barrier, results, stop, realtime):
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops the run (through `stop`)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the parent's handler: terminate() ends it
    try:
        if realtime:  # as pipeprof runs its training loops (see `pipeprof workload --help`)
            try:
                os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
            except PermissionError:
                if rank == 0:
                    results.put((rank, "note", "the simulated accelerators run at normal priority "
                                              "(real-time scheduling needs root, CAP_SYS_NICE or ulimit -r)"))
        torch.set_num_threads(1)
        dataset = NpzSamples(files, w["num_samples_per_file"], w["max_dimension"], w["preprocess"],
                             w["seed"] + rank)
        kwargs = {}
        if w["read_threads"] > 0:
            factor = -(-w["prefetch_size"] // w["read_threads"])
            kwargs = {"prefetch_factor": factor if factor > 0 else 2, "persistent_workers": True}
        if w["read_threads"] > 0:
            kwargs["worker_init_fn"] = normal_priority
        loader = DataLoader(dataset, batch_size=w["batch_size"],
                            sampler=ContiguousSampler(len(dataset), rank, ranks),
                            num_workers=w["read_threads"], drop_last=True, pin_memory=False, **kwargs)
        steps = steps_per_epoch(w, ranks)
        rng = np.random.default_rng(w["seed"] + rank)
        ns = time.perf_counter_ns
        for epoch in range(1, w["epochs"] + 1):
            barrier.wait()
            if stop.is_set():
                barrier.abort()  # the others stop too, wherever they wait
                break
            start = ns()
            records = []
            batches = iter(loader)
            load_start = ns()
            for _ in range(steps):
                try:
                    next(batches)
                except StopIteration:
                    barrier.abort()  # out of batches: the others end the epoch too
                    break
                loaded = ns()
                t = w["compute"](rng)
                if t > 0:
                    time.sleep(t)
                computed = ns()
                try:
                    barrier.wait()
                except threading.BrokenBarrierError:
                    records.append((loaded - load_start, computed - loaded, computed - load_start, 0))
                    break
                after = ns()
                records.append((loaded - load_start, computed - loaded, computed - load_start, after - computed))
                load_start = after
                if stop.is_set():
                    barrier.abort()  # every rank stops at this step, none waits for another
                    break
            results.put((rank, epoch, start, ns(), records, len(records) == steps))
            if len(records) < steps:
                break
    except threading.BrokenBarrierError:
        pass
    except Exception as e:  # reported by the parent
        results.put((rank, "error", "%s: %s" % (type(e).__name__, e)))
        barrier.abort()
    results.put((rank, "done"))


def run(w, files, ranks, stop, realtime=True, notes=None):
    """One run with `ranks` accelerators: per rank, per epoch (start, end, records, complete)."""
    ctx = mp.get_context("fork")
    barrier = ctx.Barrier(ranks)
    results = ctx.Queue()
    procs = [ctx.Process(target=accelerator, args=(r, ranks, w, files, barrier, results, stop, realtime))
             for r in range(ranks)]
    for p in procs:
        p.start()
    epochs, done, error = {}, set(), None
    try:
        while len(done) < ranks:
            try:
                msg = results.get(timeout=1)
            except Exception:
                # A process that ended without saying it was done died (a signal, out of memory):
                # the others would wait for it at the barrier forever.
                dead = [r for r, p in enumerate(procs) if p.exitcode is not None and r not in done]
                if dead:
                    error = error or "accelerator %d died (exit code %s)" % (dead[0], procs[dead[0]].exitcode)
                    stop.set()
                    barrier.abort()
                    break
                continue
            if msg[1] == "done":
                done.add(msg[0])
            elif msg[1] == "note":
                if notes is not None and msg[2] not in notes:
                    notes.append(msg[2])
            elif msg[1] == "error":
                error = error or "accelerator %d: %s" % (msg[0], msg[2])
                stop.set()
            else:
                rank, epoch, start, end, records, complete = msg
                epochs.setdefault(epoch, {})[rank] = (start, end, records, complete)
    finally:
        for p in procs:
            p.join(timeout=30)
            if p.is_alive():
                p.kill()
                p.join()
    if error:
        raise RuntimeError(error)
    return epochs


def main(argv):
    p = argparse.ArgumentParser(
        description="Run a DLIO npz workload through PyTorch's DataLoader (DLIO's PyTorch path) and "
                    "write pipeprof's results format.")
    p.add_argument("workload", help="a DLIO workload file (YAML) with npz files")
    p.add_argument("overrides", nargs="*", help="Hydra-style overrides: ++workload.reader.read_threads=2")
    p.add_argument("--accelerators", "-n", type=int, default=1, help="simulated accelerators (processes)")
    p.add_argument("--find-max-accelerators", action="store_true",
                   help="search the most accelerators whose AU meets metric.au")
    p.add_argument("--max-accelerators", type=int, default=64)
    p.add_argument("--recheck-au", type=float, default=2.0,
                   help="a probe whose AU lies within this many points of metric.au (or that fails at "
                        "a new highest count) is run again and decided by the median of three runs, as "
                        "pipeprof's search does (0: every probe once)")
    p.add_argument("--scale", type=float, default=None, help="fraction of the files (default: pipeprof.scale, else 1)")
    p.add_argument("--out", default="pytorch_results.json", help="results file (default %(default)s)")
    p.add_argument("--id", default=None, help="the entry's id in the results file (default: workload:NAME)")
    p.add_argument("--normal-priority", action="store_true",
                   help="run the accelerator processes at normal priority (default: real-time where "
                        "permitted, their DataLoader workers at normal priority, as pipeprof runs them)")
    p.add_argument("--quiet", "-q", action="store_true")
    a = p.parse_args(argv)
    if a.accelerators < 1 or a.max_accelerators < 1:
        raise InputError("--accelerators and --max-accelerators: expected at least 1")
    if not 0 <= a.recheck_au <= 100:
        raise InputError("--recheck-au: expected 0 to 100 points, got %g" % a.recheck_au)
    w = load_workload(a.workload, a.overrides, a.scale)
    files = training_files(w)
    stop = mp.get_context("fork").Event()
    interrupted = False

    def on_signal(sig, frame):
        nonlocal interrupted
        if interrupted:
            signal.signal(sig, signal.SIG_DFL)
            os.kill(os.getpid(), sig)
        interrupted = True
        stop.set()
        sys.stderr.write("\ninterrupted: stopping after the current step (again to abort)\n")

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    extra = {}
    notes = []
    realtime = not a.normal_priority
    ranks = a.accelerators
    if a.find_max_accelerators:
        probes, lo, hi, n = [], 0, 0, 1

        threshold = w["au"] * 100
        highest = [0]  # the most accelerators run so far

        def probe(n):
            if steps_per_epoch(w, n) < 2:
                probes.append({"accelerators": n, "au_percentage": 0.0, "meets": False})
                return False
            # One run, or, close to the threshold or failing at a new highest count, the median of
            # three (the third only when the first two disagree): the rule of pipeprof's own search
            # (docs/workloads.md).
            new_high = n > highest[0]
            runs = []  # (AU, samples/s, an epoch measured) of each complete run
            while not interrupted:
                _, au, thr, _, _, _ = metrics(w, run(w, files, n, stop, realtime, notes), n)
                if interrupted:
                    break
                runs.append((statistics.fmean(au) if au else 0.0, statistics.fmean(thr) if thr else 0.0, bool(au)))
                highest[0] = max(highest[0], n)
                first = runs[0][0]
                again = abs(first - threshold) <= a.recheck_au or (new_high and first < threshold)
                if len(runs) == 1 and not (a.recheck_au > 0 and again):
                    break
                if len(runs) == 3 or (len(runs) == 2 and (runs[0][0] >= threshold) == (runs[1][0] >= threshold)):
                    break
            by_au = sorted(runs)
            if len(by_au) == 2:
                mean_au, mean_thr = (by_au[0][0] + by_au[1][0]) / 2, (by_au[0][1] + by_au[1][1]) / 2
            elif by_au:
                mean_au, mean_thr = by_au[len(by_au) // 2][:2]
            else:
                mean_au, mean_thr = 0.0, 0.0
            ok = bool(runs) and all(r[2] for r in runs) and mean_au >= threshold and not interrupted
            record = {"accelerators": n, "au_percentage": mean_au,
                      "throughput_samples_per_second": mean_thr, "meets": ok}
            if len(runs) > 1:
                record["au_runs"] = [r[0] for r in runs]
            probes.append(record)
            if not a.quiet:
                sys.stderr.write("  %4d accelerator(s): AU %6.2f%%  %s%s\n" % (
                    n, mean_au, "ok" if ok else "below",
                    "  (runs: %s)" % ", ".join("%.2f%%" % r[0] for r in runs) if len(runs) > 1 else ""))
            return ok

        while n <= a.max_accelerators and not interrupted:
            if not probe(n):
                hi = n
                break
            lo, n = n, n * 2
        if hi == 0 and lo < a.max_accelerators and not interrupted:  # every doubling met it
            if probe(a.max_accelerators):
                lo = a.max_accelerators
            else:
                hi = a.max_accelerators
        while hi > lo + 1 and not interrupted:
            mid = (lo + hi) // 2
            if probe(mid):
                lo = mid
            else:
                hi = mid
        extra["max_accelerators"] = {"max_accelerators": lo, "limit": a.max_accelerators,
                                     "probes": probes}
        print("max accelerators at AU >= %.0f%%: %d" % (w["au"] * 100, lo))
        ranks = max(1, lo)
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    epochs = run(w, files, ranks, stop, realtime, notes) if not interrupted else {}
    extra["accelerator_priority"] = "normal" if (not realtime or notes) else "SCHED_FIFO"
    if notes:
        extra["notes"] = notes
        for n in notes:
            sys.stderr.write("note: %s\n" % n)
    x = experiment(w, ranks, epochs, interrupted, extra, {
        "name": "pytorch_dataloader", "id": a.id, "loader": "pytorch", "format": "npz",
        "description": "DLIO workload %s through PyTorch's DataLoader (torch %s): npz files, %d accelerator(s), "
                       "%d workers each" % (w["name"], torch.__version__, ranks, w["read_threads"]),
        "spec": {"name": "pytorch_dataloader", "peer": "torch.utils.data.DataLoader",
                 "num_workers": w["read_threads"], "batch_size": w["batch_size"]}})
    doc = {"schema_version": 4, "pipeprof_version": "pytorch_dataloader peer", "created_utc": started,
           "repetitions": 1, "interrupted": interrupted, "environment": environment("torch %s, numpy %s" % (torch.__version__, np.__version__)),
           "machine": {"sleep_overshoot": sleep_overshoot()}, "experiments": [x]}
    tmp = a.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    os.replace(tmp, a.out)
    d = x["workload"]["dlio"]
    print("%s through PyTorch's DataLoader: %d accelerator(s), %d worker(s) each: AU %.2f%% (%.2f), "
          "%.1f samples/s, %.1f MB/s, %s" % (w["name"], ranks, w["read_threads"], d["train_au_mean_percentage"],
                                             d["train_au_stdev_percentage"],
                                             d["train_throughput_mean_samples_per_second"],
                                             d["train_io_mean_MB_per_second"], d["train_au_meet_expectation"]))
    sys.stderr.write("wrote %s\n" % a.out)
    return 130 if interrupted else 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except InputError as e:
        sys.stderr.write("pytorch_dataloader: %s\n" % e)
        sys.exit(2)
    except RuntimeError as e:
        sys.stderr.write("pytorch_dataloader: %s\n" % e)
        sys.exit(1)
