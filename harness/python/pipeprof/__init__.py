"""pipeprof for PyTorch users: watch a training loop and its DataLoader live, with a verdict.

    import pipeprof
    for batch in pipeprof.watch(loader):
        step(batch)

    for x in pipeprof.Pipeline.from_spec("spec.json"): ...   # pipeprof's own pipelines

    best = pipeprof.tune(make_loader, {"num_workers": [0, 2, 4, 8], "batch_size": [32, 64]}, step)

See docs/python.md.
"""

from ._pipeprof import now_ns
from ._pipeline import InputDataError, Pipeline, PipelineError, SpecError, torch_dataset
from ._tune import Trial, TuneResult, tune
from ._watch import Watch, profile, watch

__all__ = ["InputDataError", "Pipeline", "PipelineError", "SpecError", "Trial", "TuneResult",
           "Watch", "now_ns", "profile", "torch_dataset", "tune", "watch"]
