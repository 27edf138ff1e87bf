"""pipeprof.tune: autotune's offline search over a DataLoader's settings, measured on the real loop."""

import math
import sys
import time

from . import _pipeprof


def _samples_in(batch):
    """The number of samples in a batch: the first dimension of its first tensor or array."""
    while isinstance(batch, (list, tuple)) and batch:
        first = batch[0]
        if not isinstance(first, (list, tuple, dict)) and not hasattr(first, "shape"):
            return len(batch)  # a list of samples
        batch = first
    if isinstance(batch, dict) and batch:
        return _samples_in(next(iter(batch.values())))
    shape = getattr(batch, "shape", None)
    if shape is not None and len(shape) > 0:
        return int(shape[0])
    return 1


def _stop_workers(it):
    shutdown = getattr(it, "_shutdown_workers", None)
    if shutdown is not None:
        shutdown()


class Trial:
    """One measured window: the settings, samples/s, the mean wait for a batch, and any error."""

    __slots__ = ("index", "settings", "samples_per_s", "wait_ms", "ok", "error", "phase")

    def __init__(self, index, settings, samples_per_s, wait_ms, ok, error, phase):
        self.index, self.settings = index, settings
        self.samples_per_s, self.wait_ms = samples_per_s, wait_ms
        self.ok, self.error, self.phase = ok, error, phase

    def __repr__(self):
        if not self.ok:
            return f"Trial({self.index}, {self.settings}, failed: {self.error})"
        return (f"Trial({self.index}, {self.settings}, {self.samples_per_s:.1f} samples/s, "
                f"wait {self.wait_ms:.2f} ms)")


class TuneResult:
    """The best settings found, with every trial as evidence."""

    def __init__(self, best, best_samples_per_s, trials, grid_size, stopped, strategy):
        self.best = best
        self.best_samples_per_s = best_samples_per_s
        self.trials = trials
        self.grid_size = grid_size
        self.stopped = stopped
        self.strategy = strategy

    def __repr__(self):
        return (f"TuneResult(best={self.best}, {self.best_samples_per_s:.1f} samples/s, "
                f"{len(self.trials)} trials of a {self.grid_size}-point grid)")

    def table(self):
        """Every trial, one line each, then the best."""
        names = list(self.best)
        lines = [f"{'#':>3}  " + "  ".join(f"{n:>16}" for n in names) + f"  {'samples/s':>10}  {'wait ms':>8}  phase"]
        for t in self.trials:
            cells = "  ".join(f"{str(t.settings[n]):>16}" for n in names)
            figures = (f"{t.samples_per_s:>10.1f}  {t.wait_ms:>8.2f}" if t.ok
                       else f"{'failed':>10}  {'':>8}")
            lines.append(f"{t.index:>3}  {cells}  {figures}  {t.phase}")
        lines.append(f"best: {self.best}, {self.best_samples_per_s:.1f} samples/s "
                     f"({len(self.trials)} trials, {self.strategy}; the grid has {self.grid_size} points)")
        return "\n".join(lines)


def tune(make_loader, space, step=None, *, batches=20, seconds=0.5, warmup=3, strategy="hill", budget=None,
         objective="throughput", repeats=1, start=None, seed=1, file=None, verbose=True):
    """Searches a DataLoader's settings for the most samples/s (or the least wait) of the real loop.

    make_loader(**settings) builds a loader (settings: one value per key of `space`, e.g.
    {"num_workers": [0, 1, 2, 4, 8], "prefetch_factor": [1, 2, 4], "pin_memory": [False, True],
    "batch_size": [32, 64, 128]}). Each trial iterates a fresh loader: `warmup` batches (the
    workers starting) untimed, then at least `batches` batches (and twice the batches made ahead) and
    `seconds` through `step(batch)` (the training step; None: no step), timed: samples/s over the window and the loop's mean wait for a batch.
    The search is autotune's offline search (`strategy`: hill, random or grid), with `budget`
    trials (default: the whole grid for grid, else a third of it, at least 4), hill climbing from `start` (a dict of
    values; default the middle of each list) and measuring each point `repeats` times (1: within a
    third of the grid the search visits more points; raise it where one window's samples/s moves
    by more than a few per cent from one trial to the next). A trial
    whose loader or step raises is recorded as failed and never chosen; Ctrl-C ends the search.
    Returns a TuneResult: the best settings, their samples/s and every trial.
    """
    if not isinstance(space, dict) or not space:
        raise ValueError("pipeprof.tune: space must be a non-empty dict of name -> list of values")
    names = list(space)
    values = {}
    for name in names:
        v = space[name]
        if isinstance(v, (str, bytes)) or not hasattr(v, "__len__") or len(v) == 0:
            raise ValueError(f"pipeprof.tune: space[{name!r}] must be a non-empty list of values")
        values[name] = list(v)
    if batches < 1 or warmup < 0:
        raise ValueError("pipeprof.tune: batches must be at least 1 and warmup at least 0")
    grid = math.prod(len(v) for v in values.values())
    if budget is None:
        budget = grid if strategy == "grid" else max(4, grid // 3)
    start = start or {}
    for name in start:
        if name not in values:
            raise ValueError(f"pipeprof.tune: start names {name!r}, which is not in the space")
        if start[name] not in values[name]:
            raise ValueError(f"pipeprof.tune: start[{name!r}] = {start[name]!r} is not one of {values[name]}")
    indexed = [(n, len(values[n]), values[n].index(start[n]) if n in start else (len(values[n]) - 1) // 2)
               for n in names]
    out = file if file is not None else sys.stderr
    trials = []

    def settings_of(point):
        return {n: values[n][point[n]] for n in names}

    def trial(point):
        settings = settings_of(point)
        loader = make_loader(**settings)
        # Batches made ahead (num_workers x prefetch_factor) are drained before the window, so it
        # measures the steady rate, not a full buffer.
        ahead = int(getattr(loader, "num_workers", 0) or 0) * int(getattr(loader, "prefetch_factor", 0) or 0)
        it = iter(loader)
        try:
            for _ in range(warmup + ahead):
                next(it)
            samples = 0
            waits = 0
            n = 0
            t_start = time.perf_counter()
            least = max(batches, 2 * ahead)  # a window long against the batches in flight
            while n < least or time.perf_counter() - t_start < seconds:
                t0 = time.perf_counter()
                try:
                    batch = next(it)
                except StopIteration:
                    break
                waits += time.perf_counter() - t0
                samples += _samples_in(batch)
                n += 1
                if step is not None:
                    step(batch)
            elapsed = time.perf_counter() - t_start
        finally:
            _stop_workers(it)
        if n == 0 or samples == 0:
            raise ValueError(f"the loader gave no batch after its {warmup} warm-up batches")
        rate = samples / elapsed
        # autotune minimizes: the time per 1000 samples, and the wait per batch.
        return (1e6 / rate, 1e3 * waits / n)

    def on_trial(index, point, wall_ms, wait_ms, ok, error, phase):
        settings = settings_of(point)
        rate = 1e6 / wall_ms if ok and wall_ms > 0 else 0.0
        t = Trial(index, settings, rate, wait_ms, ok, error, phase)
        trials.append(t)
        if verbose:
            text = (f"{rate:.1f} samples/s, wait {wait_ms:.2f} ms" if ok else f"failed: {error}")
            print(f"pipeprof tune [{index + 1}/{budget}] {settings}: {text} ({phase})", file=out, flush=True)

    r = _pipeprof.tune_space(indexed, trial, strategy, objective, int(budget), int(repeats),
                             int(seed), on_trial)
    best = settings_of(r["best"])
    ok = [t for t in trials if t.ok and t.settings == best]
    best_rate = sum(t.samples_per_s for t in ok) / len(ok) if ok else 0.0
    result = TuneResult(best, best_rate, trials, grid, r["stopped"], strategy)
    if verbose:
        print(f"pipeprof tune: best {best}: {best_rate:.1f} samples/s after {len(trials)} trials "
              f"({strategy}, {r['stopped']}; the grid has {grid} points)", file=out, flush=True)
    return result
