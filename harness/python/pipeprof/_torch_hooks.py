"""What pipeprof.watch installs in a DataLoader's worker processes and its pin-memory thread.

Inside a worker (through the loader's worker_init_fn, which keeps the user's own): every fetch
of a batch, each __getitem__ / __getitems__ / next() of an iterable dataset inside it, collate_fn,
and the time between fetches (the worker waiting on its index queue, or sending its last batch)
go to a spool file that the loop's process reads while the worker runs. In the loop's process:
the pin-memory thread's pin_memory calls.
"""

import multiprocessing.util
import os
import threading
import time

from . import _pipeprof

_mono = time.monotonic_ns

# Strong references to this worker's recorder, so its spool lives (and is flushed) to the end.
_worker_recorder = None


class _WorkerRecorder:
    __slots__ = ("spool", "tid", "cat", "wait_cat", "fetch", "getitem", "getitems", "next",
                 "collate", "wait", "last_end")

    def __init__(self, spool_dir, worker_id):
        pid = os.getpid()
        self.spool = _pipeprof.SpoolWriter(os.path.join(spool_dir, f"worker-{worker_id}-{pid}.spool"),
                                           f"DataLoader worker {worker_id}")
        self.spool.set_flush_interval_ns(100_000_000)
        self.tid = threading.get_native_id()
        self.spool.thread_name(self.tid, f"worker {worker_id}")
        name = self.spool.name
        self.cat, self.wait_cat = name("pipeline"), name("wait")
        self.fetch, self.getitem, self.getitems = name("fetch"), name("__getitem__"), name("__getitems__")
        self.next, self.collate, self.wait = name("next(dataset)"), name("collate_fn"), name("wait for index")
        self.last_end = 0


class _TimedMap:
    """A map-style dataset whose __getitem__ calls are spans."""

    def __init__(self, dataset, rec):
        self._dataset, self._rec = dataset, rec

    def __getitem__(self, index):
        t0 = _mono()
        try:
            return self._dataset[index]
        finally:
            rec = self._rec
            rec.spool.span(rec.getitem, rec.cat, rec.tid, t0, _mono())

    def __len__(self):
        return len(self._dataset)

    def __getattr__(self, name):
        return getattr(self._dataset, name)


class _TimedMapItems(_TimedMap):
    """The same, for a dataset that fetches a batch at once with __getitems__."""

    def __getitems__(self, indices):
        t0 = _mono()
        try:
            return self._dataset.__getitems__(indices)
        finally:
            rec = self._rec
            rec.spool.span(rec.getitems, rec.cat, rec.tid, t0, _mono())


class _TimedIterator:
    def __init__(self, it, rec):
        self._it, self._rec = it, rec

    def __iter__(self):
        return self

    def __next__(self):
        t0 = _mono()
        try:
            return next(self._it)
        finally:
            rec = self._rec
            rec.spool.span(rec.next, rec.cat, rec.tid, t0, _mono())


class _TimedIterable:
    def __init__(self, dataset, rec):
        self._dataset, self._rec = dataset, rec

    def __iter__(self):
        return _TimedIterator(iter(self._dataset), self._rec)

    def __getattr__(self, name):
        return getattr(self._dataset, name)


def _timed_collate(collate_fn, rec):
    def collate(data):
        t0 = _mono()
        try:
            return collate_fn(data)
        finally:
            rec.spool.span(rec.collate, rec.cat, rec.tid, t0, _mono())
    return collate


def _timed_fetch(fetch, rec):
    def timed(index):
        t0 = _mono()
        spool = rec.spool
        if rec.last_end:
            spool.span(rec.wait, rec.wait_cat, rec.tid, rec.last_end, t0)
        try:
            return fetch(index)
        finally:
            t1 = _mono()
            spool.span(rec.fetch, rec.cat, rec.tid, t0, t1)
            rec.last_end = t1
    return timed


def instrument_worker(spool_dir, worker_id, started_ns):
    """Called first thing in a worker: records its start, then wraps the fetcher it creates next."""
    global _worker_recorder
    import torch.utils.data as tud

    rec = _WorkerRecorder(spool_dir, worker_id)
    rec.spool.instant(rec.spool.name("worker started"), rec.cat, rec.tid, started_ns)
    rec.spool.flush()
    _worker_recorder = rec
    # Written out when the worker ends normally (multiprocessing runs these finalizers).
    multiprocessing.util.Finalize(None, rec.spool.flush, exitpriority=100)

    kind = tud._DatasetKind
    original = kind.create_fetcher

    def create_fetcher(dataset_kind, dataset, auto_collation, collate_fn, drop_last):
        if dataset_kind == kind.Iterable:
            dataset = _TimedIterable(dataset, rec)
        elif hasattr(dataset, "__getitems__") and dataset.__getitems__:
            dataset = _TimedMapItems(dataset, rec)
        else:
            dataset = _TimedMap(dataset, rec)
        fetcher = original(dataset_kind, dataset, auto_collation, _timed_collate(collate_fn, rec),
                           drop_last)
        fetcher.fetch = _timed_fetch(fetcher.fetch, rec)
        return fetcher

    kind.create_fetcher = staticmethod(create_fetcher)


class WorkerInit:
    """A worker_init_fn that instruments the worker, then calls the user's own (kept as it was)."""

    def __init__(self, spool_dir, user_fn):
        self.spool_dir = spool_dir
        self.user_fn = user_fn

    def __call__(self, worker_id):
        started = _mono()
        instrument_worker(self.spool_dir, worker_id, started)
        if self.user_fn is not None:
            self.user_fn(worker_id)


class PinMemoryTimer:
    """Times the pin-memory thread's pin_memory calls (the outermost of its recursive calls)."""

    def __init__(self):
        self._sessions = []
        self._original = None
        self._depth = threading.local()
        self._lock = threading.Lock()

    def attach(self, session):
        with self._lock:
            self._sessions.append(session)
            if self._original is not None:
                return
            try:
                import torch.utils.data._utils.pin_memory as pm
            except ImportError:
                return
            self._original = original = pm.pin_memory
            depth = self._depth
            sessions = self._sessions

            def pin_memory(data, *args, **kwargs):
                outer = getattr(depth, "n", 0) == 0
                depth.n = getattr(depth, "n", 0) + 1
                t0 = _mono() if outer else 0
                try:
                    return original(data, *args, **kwargs)
                finally:
                    depth.n -= 1
                    if outer:
                        t1 = _mono()
                        tid = threading.get_native_id()
                        for s in list(sessions):
                            s.thread_span(tid, "pin_memory", "pin_memory", "pipeline", t0, t1)

            pm.pin_memory = pin_memory

    def detach(self, session):
        with self._lock:
            if session in self._sessions:
                self._sessions.remove(session)
            if self._sessions or self._original is None:
                return
            import torch.utils.data._utils.pin_memory as pm
            pm.pin_memory = self._original
            self._original = None


pin_memory_timer = PinMemoryTimer()
