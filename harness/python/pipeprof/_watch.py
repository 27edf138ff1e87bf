"""pipeprof.watch: a training loop and its DataLoader's workers on one timeline, live, with a verdict."""

import atexit
import contextlib
import json
import os
import resource
import shutil
import signal
import sys
import tempfile
import threading
import time
import weakref

from . import _pipeprof
from ._torch_hooks import WorkerInit, pin_memory_timer
from ._tune import _samples_in

_mono = time.monotonic_ns
_open_watches = weakref.WeakSet()


def _dataloader_class():
    try:
        from torch.utils.data import DataLoader
    except ImportError:
        return None
    return DataLoader


def _cpus():
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 0



@contextlib.contextmanager
def _sigchld_held():
    """While an epoch's end is recorded and reported, a worker's exit cannot raise in the middle.

    PyTorch's DataLoader installs a SIGCHLD handler that raises "DataLoader worker ... is killed by
    signal" whenever a child ends while a dead worker is still registered. After the loop has seen
    that error, the handler would otherwise break off the recording of the epoch and the writing of
    the trace that shows it. Only the main thread can change a handler; elsewhere nothing changes.
    """
    # A handler installed outside Python (getsignal: None) could not be put back: left as it is.
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGCHLD) is None):
        yield
        return
    previous = None
    for _ in range(3):
        try:
            previous = signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            break
        except RuntimeError:  # a SIGCHLD pending on entry runs DataLoader's handler first
            continue
        except (ValueError, OSError):
            break
    if previous is None:
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGCHLD, previous)


class Watch:
    """Iterate it as you would the loader: each iteration is an epoch.

        w = pipeprof.watch(loader)
        for epoch in range(3):
            for batch in w:
                train(batch)
        w.close()

    The time between two batches is the step, unless the loop marks its steps with
    `with w.step():`. At the end of every epoch the trace so far is written to `out`
    (trace.json, which `pipeprof analyze` and the viewer read, and analysis.json) and the verdict
    is printed; close() (or leaving a `with` block, or the program's exit) removes what the
    workers wrote and puts the loader back as it was.
    """

    def __init__(self, iterable, *, out="pipeprof-watch", live=True, interval=5.0, device=None,
                 file=None, name=None):
        if interval <= 0:
            raise ValueError(f"pipeprof.watch: interval must be positive, got {interval!r}")
        self.iterable = iterable
        self.name = name or type(getattr(iterable, "dataset", iterable)).__name__
        self.out = os.fspath(out) if out is not None else None
        self._interrupted = False
        self.interval = float(interval)
        self.file = file if file is not None else sys.stderr
        self.analysis = None  # the last analysis (a dict), after an epoch
        self.notes = []
        self._spool_dir = tempfile.mkdtemp(prefix="pipeprof-watch-")
        self._session = _pipeprof.WatchSession(self._spool_dir, threading.get_native_id())
        self._explicit_steps = False
        self._in_step = False
        self._epochs = 0
        self._closed = False
        self._live = bool(live)
        self._live_stop = threading.Event()
        self._live_thread = None
        self._started_ns = 0
        self._dead = {}
        self._restore = None
        self._lock = threading.Lock()
        if self.out is not None:
            os.makedirs(self.out, exist_ok=True)
            if not os.access(self.out, os.W_OK):
                raise PermissionError(f"pipeprof.watch: cannot write to the output folder {self.out}")
        self._describe(device)
        _open_watches.add(self)

    # -- set-up -------------------------------------------------------------------------------
    def _describe(self, device):
        s = self._session
        s.set_metadata("cpus", str(_cpus()))
        if device is not None:
            s.set_metadata("device", str(getattr(device, "type", device)))
        DataLoader = _dataloader_class()
        if DataLoader is None or not isinstance(self.iterable, DataLoader):
            self.notes.append(f"{type(self.iterable).__name__} is not a torch DataLoader: only the "
                              "loop is watched (its waits and steps); what happens inside it is not seen")
            return
        loader = self.iterable
        workers = int(loader.num_workers)
        s.set_metadata("loader", "torch.utils.data.DataLoader")
        s.set_metadata("num_workers", str(workers))
        prefetch = getattr(loader, "prefetch_factor", None)
        s.set_metadata("prefetch_factor", str(prefetch if prefetch is not None and workers > 0 else 0))
        s.set_metadata("pin_memory", "true" if loader.pin_memory else "false")
        s.set_metadata("persistent_workers", "true" if loader.persistent_workers else "false")
        s.set_metadata("batch_size", str(loader.batch_size or 0))
        if workers > 0:
            user_fn = loader.worker_init_fn
            if isinstance(user_fn, WorkerInit):  # watched before: keep the user's own
                user_fn = user_fn.user_fn
            loader.worker_init_fn = WorkerInit(self._spool_dir, user_fn)
            self._restore = user_fn
        else:
            self.notes.append("num_workers=0: the loader runs on the loop's thread, so its time is "
                              "the loop's wait (get_next); there are no worker lanes")

    # -- the loop -----------------------------------------------------------------------------
    @contextlib.contextmanager
    def step(self):
        """Marks a training step explicitly (then the time between batches is no longer the step)."""
        self._explicit_steps = True
        t0 = _mono()
        try:
            yield
        finally:
            self._session.loop_span("step", t0, _mono())

    def __iter__(self):
        if self._closed:
            raise RuntimeError("pipeprof.watch: this watch is closed")
        self._begin()
        session = self._session
        epoch_start = _mono()
        cpu_start = time.process_time()
        samples = 0
        it = None
        try:
            t0 = epoch_start  # the first wait includes starting the iterator (and its workers)
            it = iter(self.iterable)
            last = None
            while True:
                if last is not None:
                    t0 = _mono()
                    if not self._explicit_steps:
                        session.loop_span("step", last, t0)
                try:
                    batch = next(it)
                except StopIteration:
                    # The loop waited for this answer too (a loader without persistent workers
                    # stops them here): a wait, though no batch came.
                    session.loop_span("get_next", t0, _mono())
                    return
                except BaseException as e:
                    self._interrupted = isinstance(e, KeyboardInterrupt)
                    self._check_workers(it, e)
                    raise
                last = _mono()  # the batch is the loop's: its step starts
                session.loop_span("get_next", t0, last)
                samples += _samples_in(batch)
                yield batch
        except KeyboardInterrupt:  # Ctrl-C in the loop's own step
            self._interrupted = True
            raise
        finally:
            with _sigchld_held():
                session.loop_span("epoch", epoch_start, _mono())
                session.end_epoch(samples, 1e3 * (time.process_time() - cpu_start),
                                  resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
                self._epochs += 1
                if it is not None:
                    self._check_workers(it)
                self._report(final=True)

    def __len__(self):
        return len(self.iterable)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    # -- what it sees -------------------------------------------------------------------------
    def _begin(self):
        if self._started_ns == 0:
            self._started_ns = _mono()
            pin_memory_timer.attach(self._session)
        if self._live and self._live_thread is None:
            self._live_thread = threading.Thread(target=self._live_loop, name="pipeprof-live",
                                                 daemon=True)
            self._live_thread.start()

    def _check_workers(self, it, error=None):
        workers = getattr(it, "_workers", []) or []
        # A worker killed while the loop read from it ends the connection (EOFError, a reset)
        # before the kernel has made its exit status known: it is given a moment to be seen
        # (DataLoader's SIGCHLD handler held meanwhile, so that the loop's error stays its own).
        patience = 1.0 if workers and isinstance(error, (EOFError, ConnectionError)) else 0.0
        deadline = _mono() + int(patience * 1e9)
        with _sigchld_held():
            while True:
                found = False
                for i, w in enumerate(workers):
                    code = getattr(w, "exitcode", None)
                    if code is not None and code != 0 and w.pid not in self._dead:
                        found = True
                        self._dead[w.pid] = {"worker": i, "pid": w.pid, "exitcode": code}
                if found or _mono() >= deadline:
                    break
                time.sleep(0.01)
        if self._dead:
            self._session.set_metadata("dead_workers", json.dumps(list(self._dead.values())))

    def _live_loop(self):
        while not self._live_stop.wait(self.interval):
            try:
                self._session.poll()
                a = json.loads(self._session.analyze(_mono() - int(self.interval * 1e9)))
            except Exception as e:  # the live line never stops the loop
                print(f"pipeprof watch: live figures unavailable: {e}", file=self.file)
                continue
            line = self._live_line(a)
            if line:
                print(line, file=self.file, flush=True)

    def _live_line(self, a):
        steps = a.get("steps")
        if not steps:
            return None
        elapsed = (_mono() - self._started_ns) / 1e9
        text = (f"pipeprof watch [{elapsed:.0f} s] last {self.interval:g} s: "
                f"input-bound {steps['input_bound_pct']:.1f}%")
        loader = a.get("loader")
        if loader:
            text += (f", {loader['batches']} batches, wait p50 {loader['wait_p50_ms']:.2f} ms "
                     f"p99 {loader['wait_p99_ms']:.2f} ms, ready {loader['ready_pct']:.0f}%")
            if loader["workers"]:
                busy = " ".join(f"{w['busy_pct']:.0f}" for w in loader["workers"])
                text += f", workers busy {busy}%"
        else:
            text += f", {steps['waits']} batches, wait {steps['mean_wait_ms']:.2f} ms a batch"
        return text

    def _report(self, final):
        with self._lock:
            try:
                self._session.poll()
                if self.out is not None:
                    a = json.loads(self._session.write_trace(os.path.join(self.out, "trace.json")))
                    with open(os.path.join(self.out, "analysis.json.tmp"), "w") as f:
                        json.dump(a, f, indent=2)
                    os.replace(os.path.join(self.out, "analysis.json.tmp"),
                               os.path.join(self.out, "analysis.json"))
                    self._session.write_results(
                        os.path.join(self.out, "results.json"), f"watch:{self.name}",
                        f"pipeprof.watch of a training loop over {type(self.iterable).__name__} "
                        f"({self.name})", "trace.json", self._interrupted)
                else:
                    a = json.loads(self._session.analyze(0))
            except Exception as e:
                print(f"pipeprof watch: could not write the trace: {e}", file=self.file)
                return
            self.analysis = a
            if final:
                print(self.verdict(), file=self.file, flush=True)

    def verdict(self):
        """The verdict as text: the figures and the suggestions, with the evidence behind each."""
        a = self.analysis
        if a is None:
            return "pipeprof watch: nothing measured yet"
        steps = a.get("steps") or {}
        lines = []
        head = f"pipeprof watch: {self._epochs} epoch{'s' if self._epochs != 1 else ''}"
        if steps:
            head += (f", {steps['waits']} batches, step {steps['mean_step_ms']:.2f} ms, wait "
                     f"{steps['mean_wait_ms']:.2f} ms a batch: input-bound "
                     f"{steps['input_bound_pct']:.1f}% ({steps['verdict']})")
        lines.append(head)
        loader = a.get("loader")
        if loader:
            lines.append(f"  each epoch's first batch (start-up) waited {loader['first_wait_ms']:.1f} ms in"
                         f" all; then input-bound {loader['steady_input_bound_pct']:.1f}%, wait p50 "
                         f"{loader['wait_p50_ms']:.2f} ms, p99 {loader['wait_p99_ms']:.2f} ms, a batch "
                         f"ready when asked {loader['ready_pct']:.0f}% of the time")
            if loader["workers"]:
                per = ", ".join(f"{w['worker']}: {w['busy_pct']:.0f}%" for w in loader["workers"])
                lines.append(f"  workers busy {loader['workers_busy_pct']:.0f}% ({per}); "
                             f"__getitem__ {loader['getitem_share_pct']:.0f}%, collate_fn "
                             f"{loader['collate_share_pct']:.0f}% of their time; "
                             f"{loader['worker_starts']} worker starts")
            if loader["settings"]["pin_memory"]:
                lines.append(f"  pin-memory thread busy {loader['pin_memory_busy_pct']:.0f}%")
            for s in loader["suggestions"]:
                lines.append(f"  suggestion ({s['knob']}): {s['text']}")
            for n in loader["notes"]:
                lines.append(f"  note: {n}")
        elif a.get("suggestion"):
            lines.append(f"  {a['suggestion']}")
        for n in self.notes:
            lines.append(f"  note: {n}")
        if self.out is not None:
            lines.append(f"  trace: {os.path.join(self.out, 'trace.json')} "
                         "(pipeprof analyze and pipeprof-viewer read it)")
        return "\n".join(lines)

    def close(self):
        """Stops the live line, writes what is new, removes the workers' spools, restores the loader."""
        if self._closed:
            return
        self._closed = True
        self._live_stop.set()
        if self._live_thread is not None:
            self._live_thread.join()
        if self._started_ns:
            pin_memory_timer.detach(self._session)
        if self._restore is not None or (_dataloader_class() is not None and
                                          isinstance(self.iterable, _dataloader_class()) and
                                          isinstance(self.iterable.worker_init_fn, WorkerInit)):
            self.iterable.worker_init_fn = self._restore
        shutil.rmtree(self._spool_dir, ignore_errors=True)
        _open_watches.discard(self)

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


def watch(iterable, *, out="pipeprof-watch", live=True, interval=5.0, device=None, file=None,
          name=None):
    """Watches a training loop over `iterable` (a torch DataLoader, or any iterable).

    for batch in pipeprof.watch(loader): ...   records, on pipeprof's clock, the loop's wait for
    each batch and its step, and inside every DataLoader worker each __getitem__ / __getitems__ /
    next() of an iterable dataset, collate_fn and the wait for the next index; the pin-memory
    thread's work; workers started, restarted and dead. Every `interval` seconds a live line;
    after every epoch a verdict with suggestions in PyTorch's terms, and the trace written to
    `out` (trace.json, analysis.json and results.json, whose entry is "watch:<name>"; None:
    nothing written). `device` ("cuda", "cpu") says where the step runs; `name` names the run
    (default: the dataset's class).
    """
    return Watch(iterable, out=out, live=live, interval=interval, device=device, file=file,
                 name=name)


def profile(iterable, **options):
    """The same watch, for the `with` form around a loop that marks its steps:

        with pipeprof.profile(loader, out="runs/p") as p:
            for batch in p:
                with p.step():
                    train_step(batch)
    """
    return watch(iterable, **options)


@atexit.register
def _close_open_watches():
    for w in list(_open_watches):
        try:
            w.close()
        except Exception:
            pass
