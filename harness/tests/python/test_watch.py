"""pipeprof.watch on real DataLoaders (Debian's python3-torch); skipped where PyTorch is absent."""

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time

import pytest

import pipeprof

torch = pytest.importorskip("torch", reason="python3-torch is not installed")
from torch.utils.data import DataLoader, Dataset, IterableDataset  # noqa: E402


class SleepyItems(Dataset):
    def __init__(self, n=48, getitem_s=0.002):
        self.n, self.getitem_s = n, getitem_s

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        time.sleep(self.getitem_s)
        return torch.full((4,), i)


class Failing(SleepyItems):
    def __getitem__(self, i):
        if i == 13:
            raise KeyError(f"sample {i} is missing")
        return super().__getitem__(i)


class Stream(IterableDataset):
    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        start = info.id if info else 0
        step = info.num_workers if info else 1
        for i in range(start, 40, step):
            yield torch.tensor([i])


def run_epochs(w, epochs, step_s):
    seen = []
    for _ in range(epochs):
        for batch in w:
            seen.append(batch)
            time.sleep(step_s)
    return seen


def loader_analysis(out):
    with open(os.path.join(out, "analysis.json")) as f:
        return json.load(f)


def test_workers_getitem_and_collate_are_on_the_timeline(tmp_path, capsys):
    loader = DataLoader(SleepyItems(), batch_size=4, num_workers=2)
    with pipeprof.watch(loader, out=tmp_path, live=False) as w:
        batches = run_epochs(w, 1, 0.002)
    assert len(batches) == 12
    a = loader_analysis(tmp_path)
    steps, loader_a = a["steps"], a["loader"]
    # 12 batches, each with its step; 13 waits: the last next() waits too, for the end.
    assert steps["waits"] == 13 and steps["steps"] == 12 and loader_a["batches"] == 12
    assert loader_a["settings"]["num_workers"] == 2
    assert [x["worker"] for x in loader_a["workers"]] == [0, 1]
    assert sum(x["items"] for x in loader_a["workers"]) == 48
    assert sum(x["fetches"] for x in loader_a["workers"]) == 12
    # Each __getitem__ sleeps 2 ms: at least 96 ms of worker time went to them.
    assert sum(x["getitem_ms"] for x in loader_a["workers"]) >= 96
    assert loader_a["getitem_share_pct"] > 50
    trace = json.load(open(tmp_path / "trace.json"))
    names = {e["name"] for e in trace["traceEvents"] if e.get("ph") == "X"}
    assert {"get_next", "step", "epoch", "fetch", "__getitem__", "collate_fn"} <= names
    lanes = {e["args"]["name"] for e in trace["traceEvents"]
             if e.get("ph") == "M" and e.get("name") == "thread_name"}
    assert {"train loop", "worker 0", "worker 1"} <= lanes
    err = capsys.readouterr().err
    assert "input-bound" in err and "workers busy" in err
    # The user's worker_init_fn slot is given back, and the workers' spools are removed.
    assert loader.worker_init_fn is None
    assert not os.path.exists(w._spool_dir)


def test_a_slow_getitem_is_input_bound_and_asks_for_workers(tmp_path):
    # 64 items of 10 ms: the steady part outweighs the worker's start (about 240 ms on a loaded
    # 2-core machine); were the start most of the wait, the analysis would name it alone.
    loader = DataLoader(SleepyItems(n=64, getitem_s=0.01), batch_size=4, num_workers=1)
    with pipeprof.watch(loader, out=tmp_path, live=False) as w:
        run_epochs(w, 1, 0.001)
    a = loader_analysis(tmp_path)
    assert a["steps"]["input_bound_pct"] > 50
    knobs = [s["knob"] for s in a["loader"]["suggestions"]]
    assert "num_workers" in knobs
    assert a["loader"]["workers_busy_pct"] > 70


def test_a_fast_loader_with_a_slow_step_is_not_input_bound(tmp_path):
    loader = DataLoader(SleepyItems(n=24, getitem_s=0.0), batch_size=4, num_workers=2,
                        persistent_workers=True)
    # A 100 ms step: a batch that two workers made ahead waits for the step, never the reverse,
    # even where a loaded machine takes milliseconds to hand a batch over from a worker.
    with pipeprof.watch(loader, out=tmp_path, live=False) as w:
        run_epochs(w, 2, 0.1)
    a = loader_analysis(tmp_path)
    # Steady state: each epoch's first wait (the workers starting, slow on a loaded machine) apart.
    assert a["loader"]["steady_input_bound_pct"] < 20
    assert a["loader"]["epochs"] == 2
    assert a["loader"]["restarts"] == 0
    assert a["loader"]["worker_starts"] == 2


def test_workers_started_every_epoch_are_restarts(tmp_path):
    loader = DataLoader(SleepyItems(n=16), batch_size=4, num_workers=2)
    with pipeprof.watch(loader, out=tmp_path, live=False) as w:
        run_epochs(w, 3, 0.0)
    a = loader_analysis(tmp_path)["loader"]
    assert a["worker_starts"] == 6 and a["restarts"] == 4
    assert all(len(x["pids"]) == 3 for x in a["workers"])
    assert "persistent_workers" in [s["knob"] for s in a["suggestions"]]


def test_an_iterable_dataset_is_timed_per_next(tmp_path):
    loader = DataLoader(Stream(), batch_size=5, num_workers=2)
    with pipeprof.watch(loader, out=tmp_path, live=False) as w:
        n = sum(len(b) for b in run_epochs(w, 1, 0.0))
    assert n == 40
    a = loader_analysis(tmp_path)["loader"]
    assert sum(x["items"] for x in a["workers"]) >= 40


def test_an_exception_in_getitem_reaches_the_loop_unchanged_and_the_trace_is_kept(tmp_path):
    loader = DataLoader(Failing(), batch_size=4, num_workers=2)
    w = pipeprof.watch(loader, out=tmp_path, live=False)
    with pytest.raises(KeyError, match="sample 13 is missing"):
        run_epochs(w, 1, 0.0)
    w.close()
    a = loader_analysis(tmp_path)
    assert a["steps"]["waits"] >= 1
    assert (tmp_path / "trace.json").stat().st_size > 0


def test_a_killed_worker_is_named_and_the_loaders_error_is_unchanged(tmp_path):
    class KillOne(SleepyItems):
        def __getitem__(self, i):
            if i == 20:
                os.kill(os.getpid(), signal.SIGKILL)
            return super().__getitem__(i)

    loader = DataLoader(KillOne(), batch_size=4, num_workers=2)
    w = pipeprof.watch(loader, out=tmp_path, live=False)
    # DataLoader's own error, as it raises it: "worker ... exited unexpectedly" or "killed by
    # signal", or, when the loop was fetching a batch the dead worker had shared, the reset or
    # the end (EOFError) of that connection.
    with pytest.raises((RuntimeError, ConnectionError, EOFError)) as caught:
        run_epochs(w, 1, 0.0)
    if isinstance(caught.value, RuntimeError):
        assert re.search(r"DataLoader worker .*(exited unexpectedly|killed by signal)",
                         str(caught.value)), caught.value
    w.close()
    a = loader_analysis(tmp_path)["loader"]
    dead = [x for x in a["workers"] if x["died"]]
    assert len(dead) == 1 and dead[0]["exitcode"] == -signal.SIGKILL
    texts = [s["text"] for s in a["suggestions"] if s["knob"] == "worker"]
    assert texts and "SIGKILL" in texts[0] and str(dead[0]["pids"][-1]) in texts[0]



def test_a_childs_end_cannot_break_off_an_epochs_report():
    # DataLoader's SIGCHLD handler raises its error again whenever a child ends after a worker died;
    # the epoch's end is recorded and reported with that handler held, and it is back afterwards.
    from pipeprof._watch import _sigchld_held

    def raising(signum, frame):
        raise RuntimeError("DataLoader worker (pid 1) is killed by signal: Killed.")

    previous = signal.signal(signal.SIGCHLD, raising)
    try:
        with _sigchld_held():
            subprocess.run(["true"], check=True)
            time.sleep(0.05)
            assert sum(range(1000)) == 499500
        assert signal.getsignal(signal.SIGCHLD) is raising
        with pytest.raises(RuntimeError, match="killed by signal"):
            subprocess.run(["true"])
            time.sleep(0.5)
    finally:
        signal.signal(signal.SIGCHLD, previous)

def test_no_workers_and_plain_iterables_are_watched_at_the_loop(tmp_path):
    loader = DataLoader(SleepyItems(n=8), batch_size=2, num_workers=0)
    w = pipeprof.watch(loader, out=tmp_path / "a", live=False)
    run_epochs(w, 1, 0.0)
    w.close()
    a = loader_analysis(tmp_path / "a")
    assert a["steps"]["steps"] == 4 and a["loader"]["workers"] == []
    assert any("num_workers=0" in n for n in w.notes)

    w = pipeprof.watch(iter(range(5)), out=tmp_path / "b", live=False)
    assert list(w) == [0, 1, 2, 3, 4]
    w.close()
    a = loader_analysis(tmp_path / "b")
    assert a["loader"] is None and a["steps"]["steps"] == 5
    assert any("not a torch DataLoader" in n for n in w.notes)


def test_explicit_steps(tmp_path):
    loader = DataLoader(SleepyItems(n=8, getitem_s=0.0), batch_size=2, num_workers=0)
    with pipeprof.profile(loader, out=tmp_path, live=False) as w:
        for batch in w:
            time.sleep(0.002)  # not part of the marked step
            with w.step():
                time.sleep(0.01)
    s = loader_analysis(tmp_path)["steps"]
    assert s["steps"] == 4
    assert 10 <= s["mean_step_ms"] < 30


def test_the_live_line_appears(tmp_path):
    loader = DataLoader(SleepyItems(n=64), batch_size=4, num_workers=2)
    lines = []

    class Sink:
        def write(self, text):
            lines.append(text)

        def flush(self):
            pass

    with pipeprof.watch(loader, out=tmp_path, interval=0.1, file=Sink()) as w:
        run_epochs(w, 1, 0.01)
    live = [x for x in lines if "pipeprof watch [" in x]
    assert live, "".join(lines)
    assert "workers busy" in "".join(live)


def test_ctrl_c_writes_the_trace(tmp_path):
    script = textwrap.dedent(f"""
        import os, signal, time, threading, torch, pipeprof
        from torch.utils.data import DataLoader, Dataset
        class D(Dataset):
            def __len__(self): return 10000
            def __getitem__(self, i):
                time.sleep(0.001); return i
        loader = DataLoader(D(), batch_size=4, num_workers=2)
        w = pipeprof.watch(loader, out={str(tmp_path)!r}, live=False)
        threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
        try:
            for b in w:
                time.sleep(0.001)
        except KeyboardInterrupt:
            raise SystemExit(130)
    """)
    env = dict(os.environ)
    r = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 130, r.stderr
    a = loader_analysis(tmp_path)
    assert a["steps"]["waits"] > 10
    assert "pipeprof watch: 1 epoch" in r.stderr


def test_bad_arguments():
    with pytest.raises(ValueError, match="interval"):
        pipeprof.watch([], interval=0)


def pipeprof_bin():
    path = os.environ.get("PIPEPROF_BIN")
    if not path or not os.path.exists(path):
        pytest.skip("PIPEPROF_BIN (the pipeprof program, set by CTest) is not there")
    return path


def test_the_results_file_is_read_by_report_and_compare(tmp_path):
    runs = {}
    for workers in (0, 2):
        loader = DataLoader(SleepyItems(n=16, getitem_s=0.001), batch_size=4, num_workers=workers)
        out = tmp_path / f"w{workers}"
        with pipeprof.watch(loader, out=out, live=False, name="sleepy") as w:
            run_epochs(w, 3, 0.002)
        runs[workers] = out
    doc = json.load(open(runs[2] / "results.json"))
    (entry,) = doc["experiments"]
    assert entry["kind"] == "loader_watch" and entry["id"] == "watch:sleepy"
    assert len(entry["repetitions"]) == 3
    assert all(r["samples"] == 16 and r["samples_per_second"] > 0 for r in entry["repetitions"])
    assert entry["loader_watch"]["settings"]["num_workers"] == 2
    assert entry["trace"] == "trace.json"
    report = subprocess.run([pipeprof_bin(), "report", str(runs[2] / "results.json"), "--out",
                             str(tmp_path / "report")], capture_output=True, text=True, timeout=60)
    assert report.returncode == 0, report.stderr
    md = (tmp_path / "report" / "report.md").read_text()
    assert "## PyTorch DataLoaders, watched" in md and "| watch:sleepy | 2 |" in md
    # compare judges a watched run on AU and samples/s, epoch by epoch.
    cmp = subprocess.run([pipeprof_bin(), "compare", str(runs[0] / "results.json"),
                          str(runs[2] / "results.json")], capture_output=True, text=True, timeout=60)
    assert cmp.returncode in (0, 1), cmp.stderr
    assert "watch:sleepy" in cmp.stdout, cmp.stdout
