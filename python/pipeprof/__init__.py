"""pipeprof for PyTorch users: watch a training loop and its DataLoader live, with a verdict.

    import pipeprof
    for batch in pipeprof.watch(loader):
        step(batch)

See docs/python.md.
"""

from ._pipeprof import now_ns
from ._watch import Watch, watch

__all__ = ["Watch", "now_ns", "watch"]
