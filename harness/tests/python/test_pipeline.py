"""pipeprof.Pipeline from Python: values, zero-copy arrays, errors, and the torch adapter."""

import threading
import time

import numpy as np
import pytest

import pipeprof


def test_elements_are_numpy_arrays_over_the_pipelines_buffers():
    p = pipeprof.Pipeline.from_spec({"stages": [{"op": "range", "stop": 10},
                                                {"op": "batch", "batch_size": 4}]})
    batches = list(p)
    assert [b.tolist() for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert batches[0].dtype == np.int64
    # Views of the pipeline's tensors: no copy, read-only (the buffers may be shared).
    assert not batches[0].flags.owndata and not batches[0].flags.writeable
    with pytest.raises(ValueError):
        batches[0][0] = 7
    # Each pass is an epoch.
    assert len(list(p)) == 3
    stats = p.stats()
    assert stats[0]["op"] == "batch" and stats[0]["elements"] == 3


def test_npz_files_with_several_arrays_come_as_tuples(tmp_path):
    files = []
    for i in range(3):
        f = tmp_path / f"s{i}.npz"
        np.savez(f, x=np.full((2, 3), i, dtype=np.float32), y=np.arange(4, dtype=np.int32) + i)
        files.append(str(f))
    p = pipeprof.Pipeline.from_spec({"stages": [{"op": "npz", "files": files, "keys": ["x", "y"]}]})
    got = list(p)
    assert len(got) == 3
    for i, (x, y) in enumerate(got):
        np.testing.assert_array_equal(x, np.full((2, 3), i, dtype=np.float32))
        np.testing.assert_array_equal(y, np.arange(4, dtype=np.int32) + i)
    assert p.stats()[0]["bytes_read"] > 0


def test_specs_from_a_file_and_from_text(tmp_path):
    f = tmp_path / "spec.json"
    f.write_text('{"stages": [{"op": "range", "stop": 3}]}')
    assert [int(x) for x in pipeprof.Pipeline.from_spec(f)] == [0, 1, 2]
    assert [int(x) for x in pipeprof.Pipeline.from_spec('{"stages": [{"op": "range", "stop": 2}]}')] == [0, 1]
    assert pipeprof.Pipeline.from_spec(str(f)).spec["stages"][0]["op"] == "range"


def test_errors_name_what_was_wrong(tmp_path):
    with pytest.raises(pipeprof.SpecError, match=r"stages\[0\]: unknown key \"count\""):
        pipeprof.Pipeline.from_spec({"stages": [{"op": "range", "count": 3}]})
    with pytest.raises(pipeprof.SpecError, match="byte"):
        pipeprof.Pipeline.from_spec('{"stages": [')
    with pytest.raises(pipeprof.SpecError, match="nosuch.json"):
        pipeprof.Pipeline.from_spec(tmp_path / "nosuch.json")
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a zip archive at all")
    p = pipeprof.Pipeline.from_spec({"stages": [{"op": "npz", "files": [str(bad)]}]})
    with pytest.raises(pipeprof.InputDataError, match="bad.npz") as e:
        list(p)
    assert isinstance(e.value, pipeprof.PipelineError)
    with pytest.raises(TypeError):
        pipeprof.Pipeline.from_spec(42)


def test_the_gil_is_released_while_the_pipeline_works():
    # A pipeline that sleeps 100 ms per element: a Python thread runs meanwhile. Were the GIL
    # held while the pipeline works, the ticker would run only between elements (about 5 ticks);
    # released, it ticks every 5 ms (80 ticks), or every 10 to 20 ms on a loaded machine.
    p = pipeprof.Pipeline.from_spec({"stages": [
        {"op": "range", "stop": 4},
        {"op": "map", "fn": "sleep_ms", "args": {"ms": 100}}]})
    ticks = []
    stop = threading.Event()

    def ticker():
        while not stop.is_set():
            ticks.append(time.monotonic())
            time.sleep(0.005)

    t = threading.Thread(target=ticker)
    t.start()
    list(p)
    stop.set()
    t.join()
    assert len(ticks) > 12, f"{len(ticks)} ticks in 400 ms of pipeline work"


def test_a_torch_iterable_dataset_over_a_pipeline():
    torch = pytest.importorskip("torch", reason="python3-torch is not installed")
    ds = pipeprof.torch_dataset({"stages": [{"op": "range", "stop": 6},
                                            {"op": "batch", "batch_size": 3}]})
    loader = torch.utils.data.DataLoader(ds, batch_size=None)
    got = [b.tolist() for b in loader]
    assert got == [[0, 1, 2], [3, 4, 5]]


def test_knobs_are_read_and_moved_and_the_online_tuner_moves_them():
    spec = {"stages": [{"op": "range", "stop": 400},
                       {"op": "map", "fn": "sleep_ms", "args": {"ms": 2}, "parallelism": "autotune"},
                       {"op": "prefetch", "buffer_size": "autotune"}]}
    p = pipeprof.Pipeline.from_spec(spec)
    it = iter(p)
    next(it)
    knobs = {(k["stage_key"], k["knob"]): k for k in p.knobs()}
    assert ("stages[1]", "parallelism") in knobs and ("stages[2]", "buffer_size") in knobs
    k = knobs[("stages[1]", "parallelism")]
    assert p.set_knob("stages[1]", "parallelism", 3) == 3
    assert p.set_knob("stages[1]", "parallelism", 10**6) == k["max"]  # clamped
    assert {(x["stage_key"], x["knob"]): x["value"] for x in p.knobs()}[("stages[1]", "parallelism")] == k["max"]
    with pytest.raises(ValueError, match=r"no knob 'speed' at stages\[1\] \(the knobs: .*stages\[1\] parallelism"):
        p.set_knob("stages[1]", "speed", 1)
    p.close()
    with pytest.raises(ValueError, match="no pass has started"):
        pipeprof.Pipeline.from_spec(spec).set_knob("stages[1]", "parallelism", 2)

    tuned = pipeprof.Pipeline.from_spec(spec, autotune=True)
    assert len(list(tuned)) == 400
    changes = tuned.tuner_changes()
    assert changes, "the online tuner moved no knob of a pipeline of 2 ms map calls"
    assert all(c["reason"] for c in changes)
    assert any(c["knob"] == "parallelism" and c["new"] > c["old"] for c in changes)


def _dlio_workload(tmp_path, stdev=0):
    """A small npz workload, its data generated by `pipeprof datagen --workload`."""
    import os
    import subprocess

    w = tmp_path / "w.yaml"
    w.write_text(f"""model:
  name: small
framework: pytorch
workflow:
  generate_data: True
  train: True
dataset:
  data_folder: {tmp_path / "data"}
  format: npz
  num_files_train: 8
  num_samples_per_file: 2
  record_length: 4096
  record_length_stdev: {stdev}
reader:
  data_loader: pytorch
  batch_size: 4
  read_threads: 2
train:
  epochs: 1
  computation_time: 0.001
""")
    return w, [os.environ["PIPEPROF_BIN"], "datagen", "--workload", str(w), "-q"], subprocess


def test_a_dlio_workloads_loader_from_its_file(tmp_path):
    w, datagen, subprocess = _dlio_workload(tmp_path)
    # Before its data is generated: the files it misses are named.
    with pytest.raises(pipeprof.SpecError, match="train"):
        pipeprof.Pipeline.from_workload(w)
    subprocess.run(datagen, check=True)
    # DLIO's readers stand each sample in by its size: 16 samples of 4096 bytes, batches of 4.
    p = pipeprof.Pipeline.from_workload(w)
    batches = list(p)
    assert [b.tolist() for b in batches] == [[4096] * 4] * 4
    assert sum(s["bytes_read"] for s in p.stats()) > 16 * 4096  # the files were read
    # The samples themselves, for rank 1 of 2: the second half of the samples, as arrays.
    p = pipeprof.Pipeline.from_workload(w, rank=1, ranks=2, samples=True)
    batches = list(p)
    assert len(batches) == 2
    assert all(b.shape == (4, 64, 64) and b.dtype == np.uint8 for b in batches)
    # Overrides as on the command line; a bad one names the key.
    assert len(list(pipeprof.Pipeline.from_workload(w, overrides=["++workload.reader.batch_size=8"]))) == 2
    with pytest.raises(pipeprof.SpecError, match=r"reader\.batch_size"):
        pipeprof.Pipeline.from_workload(w, overrides=["++workload.reader.batch_size=zero"])
    with pytest.raises(pipeprof.SpecError, match="rank"):
        pipeprof.Pipeline.from_workload(w, rank=2, ranks=2)


def test_a_workloads_samples_of_several_sizes_do_not_batch(tmp_path):
    w, datagen, subprocess = _dlio_workload(tmp_path, stdev=1024)
    subprocess.run(datagen, check=True)
    assert len(list(pipeprof.Pipeline.from_workload(w))) == 4  # sizes batch
    with pytest.raises(pipeprof.PipelineError, match=r"batch: element \d+ component 0 is uint8"):
        list(pipeprof.Pipeline.from_workload(w, samples=True))
