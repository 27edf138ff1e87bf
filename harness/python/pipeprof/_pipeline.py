"""pipeprof's own pipelines from Python, and a torch IterableDataset over one."""

import json
import os

from . import _pipeprof
from ._pipeprof import InputDataError, PipelineError, SpecError  # noqa: F401


class Pipeline:
    """A pipeprof pipeline (a JSON spec: docs in the README's "Pipeline specs").

        p = pipeprof.Pipeline.from_spec({"stages": [{"op": "range", "count": 8},
                                                    {"op": "batch", "batch_size": 4}]})
        for x in p:          # each pass is an epoch; elements are read-only numpy arrays
            ...              # (a tuple of them when an element has several components)

    Arrays view the pipeline's buffers (no copy); the GIL is released while the pipeline makes
    the next element, so Python threads run meanwhile. `stats()` gives each stage's statistics
    (elements, time per element, CPU share, buffers, bytes read, knob values) of the current pass;
    `knobs()` and `set_knob()` read and move its knobs; from_spec(..., autotune=True) lets
    autotune's online tuner move them (`tuner_changes()` says what it did and why).
    Errors: SpecError (a bad spec, naming the JSON path), InputDataError (a missing or corrupt
    data file, naming it), PipelineError (a stage failed).
    The first pipeline made in a process sets glibc's malloc to keep freed buffers of up to
    32 MiB for reuse (M_MMAP_THRESHOLD 32 MiB, M_TRIM_THRESHOLD 64 MiB), as pipeprof's programs
    do: a loader frees a file's and a batch's buffer every step, and malloc would otherwise map,
    fault in and unmap them afresh each time.
    """

    def __init__(self, core):
        self._core = core

    @classmethod
    def from_spec(cls, spec, autotune=False):
        """From a dict, a JSON text or the path of a spec file. With autotune, autotune's online
        tuner moves the knobs of each pass (the parameters written "autotune") while it runs."""
        if isinstance(spec, dict):
            core = _pipeprof.Pipeline.from_json(json.dumps(spec), "<dict>")
        elif isinstance(spec, (str, os.PathLike)):
            text = os.fspath(spec)
            if text.lstrip().startswith("{"):
                core = _pipeprof.Pipeline.from_json(text, "<text>")
            else:
                core = _pipeprof.Pipeline.from_file(text)
        else:
            raise TypeError(f"pipeprof.Pipeline.from_spec: a dict, JSON text or path, not {type(spec).__name__}")
        core.autotune = bool(autotune)
        return cls(core)

    @classmethod
    def from_workload(cls, path, overrides=(), rank=0, ranks=1, samples=False, autotune=False):
        """The data loader `pipeprof workload` runs for a DLIO workload file, one epoch per pass:
        rank `rank` of `ranks` simulated accelerators or MPI ranks, DLIO's access pattern for its
        reader (data_loader, batch_size, read_threads, file_shuffle, ...), over the files the
        workload's data generation wrote (`pipeprof datagen --workload PATH`). `overrides` are
        Hydra's, as on pipeprof's command line ("++workload.reader.batch_size=8").

        Batches hold each sample's size in bytes (int64), as DLIO's readers stand samples in;
        with samples=True they hold the samples' arrays instead (stacked: the workload's records
        must be of one size, record_length_stdev 0). A bad workload file, or files not generated
        yet, is a SpecError naming the file and key."""
        core = _pipeprof.Pipeline.from_workload(os.fspath(path), [str(o) for o in overrides],
                                                int(rank), int(ranks), bool(samples))
        core.autotune = bool(autotune)
        return cls(core)

    def __iter__(self):
        self._core.__iter__()
        return self

    def __next__(self):
        return self._core.__next__()

    def stats(self):
        return self._core.stats()

    def knobs(self):
        """The current pass's knobs: stage_key, stage, knob, value, min, max."""
        return self._core.knobs()

    def set_knob(self, stage_key, knob, value):
        """Sets a knob of the current pass (clamped to its bounds); returns the value it took.
        A knob that is not there is a ValueError naming the knobs that are."""
        return self._core.set_knob(stage_key, knob, int(value))

    def tuner_changes(self):
        """With autotune: what the online tuner changed in the current pass, with its reasons."""
        return self._core.tuner_changes()

    @property
    def spec(self):
        return json.loads(self._core.spec)

    def close(self):
        """Stops the current pass (its threads joined, its files closed)."""
        self._core.close()


def torch_dataset(spec):
    """A torch.utils.data.IterableDataset over a pipeprof pipeline: elements as torch tensors that
    share the pipeline's buffers (torch.from_numpy). Use it with DataLoader(ds, batch_size=None)
    and let the pipeline batch; each iteration is a pass of the pipeline."""
    import torch
    import warnings

    class PipelineDataset(torch.utils.data.IterableDataset):
        def __init__(self, spec):
            self.spec = spec

        def __iter__(self):
            p = Pipeline.from_spec(self.spec)
            with warnings.catch_warnings():
                # The arrays are read-only views; torch warns that it cannot make them writable.
                warnings.simplefilter("ignore", UserWarning)
                for e in p:
                    if isinstance(e, tuple):
                        yield tuple(torch.from_numpy(x) for x in e)
                    else:
                        yield torch.from_numpy(e)

    return PipelineDataset(spec)
