// pipeprof.Pipeline: pipeprof's own pipelines from Python. Elements come out as numpy arrays
// over the pipeline's buffers (no copy: each array keeps its tensor alive), and the GIL is
// released while the pipeline makes the next element.
#pragma once

#include <pybind11/pybind11.h>

namespace pipeprof::python {

void bind_pipeline(pybind11::module_& m);

}  // namespace pipeprof::python
