"""pipeprof.tune on real DataLoaders (Debian's python3-torch); skipped where PyTorch is absent."""

import io
import time

import pytest

import pipeprof

torch = pytest.importorskip("torch", reason="python3-torch is not installed")
from torch.utils.data import DataLoader, Dataset  # noqa: E402


class SleepyItems(Dataset):
    """__getitem__ waits (as a read from storage would), so workers help even on few cores."""

    def __init__(self, getitem_s):
        self.getitem_s = getitem_s

    def __len__(self):
        return 10_000

    def __getitem__(self, i):
        time.sleep(self.getitem_s)
        return torch.zeros(4)


def test_a_slow_getitem_wants_the_most_workers():
    def make(num_workers, batch_size):
        return DataLoader(SleepyItems(0.004), batch_size=batch_size, num_workers=num_workers)

    out = io.StringIO()
    r = pipeprof.tune(make, {"num_workers": [0, 1, 3], "batch_size": [4, 8]},
                      step=lambda b: time.sleep(0.001), batches=8, warmup=2, strategy="grid",
                      file=out)
    assert len(r.trials) == 6 == r.grid_size  # grid: every point once (budget: the whole grid)
    assert r.best["num_workers"] == 3, r.table()
    assert r.best_samples_per_s > 0
    by = {(t.settings["num_workers"], t.settings["batch_size"]): t.samples_per_s for t in r.trials}
    assert by[(3, 8)] > 2 * by[(0, 8)], r.table()
    assert "pipeprof tune [1/6]" in out.getvalue() and "best" in out.getvalue()
    assert "samples/s" in r.table()


def test_hill_climbing_stays_within_its_budget_and_moves_towards_workers():
    def make(num_workers):
        return DataLoader(SleepyItems(0.003), batch_size=4, num_workers=num_workers)

    r = pipeprof.tune(make, {"num_workers": [0, 1, 2, 3]}, batches=6, warmup=1, budget=8,
                      repeats=1, start={"num_workers": 0}, verbose=False)
    assert len(r.trials) <= 8
    assert r.trials[0].settings == {"num_workers": 0}  # where it was told to start
    assert r.best["num_workers"] >= 2, r.table()


def test_a_failing_trial_is_recorded_and_never_chosen():
    def make(num_workers):
        if num_workers == 2:
            raise RuntimeError("no such loader")
        return DataLoader(SleepyItems(0.003), batch_size=4, num_workers=num_workers)

    r = pipeprof.tune(make, {"num_workers": [0, 1, 2]}, batches=4, warmup=1, strategy="grid",
                      verbose=False)
    failed = [t for t in r.trials if not t.ok]
    assert len(failed) == 1 and "no such loader" in failed[0].error
    assert r.best["num_workers"] != 2


def test_bad_spaces_are_refused():
    with pytest.raises(ValueError, match="non-empty dict"):
        pipeprof.tune(lambda: None, {})
    with pytest.raises(ValueError, match=r"space\['num_workers'\]"):
        pipeprof.tune(lambda **k: None, {"num_workers": []})
    with pytest.raises(ValueError, match="not one of"):
        pipeprof.tune(lambda **k: None, {"num_workers": [1, 2]}, start={"num_workers": 3})
    with pytest.raises(ValueError, match="unknown strategy"):
        pipeprof.tune(lambda **k: None, {"num_workers": [1, 2]}, strategy="annealing")
