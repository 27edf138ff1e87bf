#include "pipeline_binding.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "pipeprof/autotune/online_tuner.h"
#include "pipeprof/harness/errors.h"
#include "pipeprof/pipelines/allocator.h"
#include "pipeprof/pipelines/errors.h"
#include "pipeprof/pipelines/iterator.h"
#include "pipeprof/pipelines/model.h"
#include "pipeprof/pipelines/spec.h"
#include "pipeprof/pipelines/tensor.h"
#include "pipeprof/trace/json_depth.h"
#include "workload/dlio_training.h"
#include "workload/dlio_workload.h"
#include "workload/workload_pipeline.h"

namespace py = pybind11;

namespace pipeprof::python {
namespace {

using pipelines::Tensor;

// A numpy array over the tensor's bytes: the tensor moves into a capsule that is the array's base,
// so the buffer lives as long as the array (and the pipeline may go on). Read-only: the pipeline's
// buffers may be shared by other elements (copy on write in C++ terms).
py::object to_numpy(Tensor t) {
  auto held = std::make_unique<Tensor>(std::move(t));
  Tensor* owned = held.get();
  py::capsule base(owned, [](void* p) { delete static_cast<Tensor*>(p); });
  held.release();  // the capsule owns it now
  std::vector<py::ssize_t> shape(owned->shape().begin(), owned->shape().end());
  const auto item = static_cast<py::ssize_t>(pipelines::dtype_size(owned->dtype()));
  std::vector<py::ssize_t> strides(shape.size());
  py::ssize_t stride = item;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= shape[i];
  }
  // pipeprof's dtype names are numpy's (bool, uint8, int32, int64, float32, float64).
  py::array a(py::dtype(std::string(pipelines::dtype_name(owned->dtype()))), shape, strides,
              static_cast<const void*>(owned->data()), base);
  py::detail::array_proxy(a.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
  return a;
}

class PyPipeline {
 public:
  PyPipeline(pipelines::Dataset dataset, nlohmann::json document,
             std::shared_ptr<const pipelines::StorageContext> storage = nullptr)
      : dataset_(std::move(dataset)), document_(std::move(document)), storage_(std::move(storage)) {
    // As pipeprof's programs do (allocator.h), once the process runs a pipeline of its own (not
    // on import: a watched DataLoader's process keeps its allocator as it is).
    static const bool kept = pipelines::keep_buffers_in_arenas();
    (void)kept;
  }
  ~PyPipeline() { stop(); }
  PyPipeline(PyPipeline&&) = default;

  static PyPipeline from_json_text(const std::string& text, const std::string& source) {
    nlohmann::json doc;
    try {
      doc = trace::parse_json(text);  // at most trace::kMaxJsonDepth levels
    } catch (const nlohmann::json::parse_error& e) {
      throw pipelines::SpecError(source + ": byte " + std::to_string(e.byte) +
                                 ": malformed JSON");
    }
    pipelines::Spec spec = pipelines::parse_spec(doc, source);
    return PyPipeline(std::move(spec.dataset), std::move(spec.document));
  }
  static PyPipeline from_file(const std::string& path) {
    pipelines::Spec spec = pipelines::load_spec(path);
    return PyPipeline(std::move(spec.dataset), std::move(spec.document));
  }

  // The loader `pipeprof workload` runs for rank `rank` of `ranks` (one epoch; DLIO's access
  // pattern), over the workload's generated training files. A bad workload file or missing files
  // are a SpecError naming the file and key.
  static PyPipeline from_workload(const std::string& path, const std::vector<std::string>& overrides,
                                  int64_t rank, int64_t ranks, bool samples) {
    namespace w = harness::workload;
    try {
      if (ranks < 1 || rank < 0 || rank >= ranks)
        throw harness::InputError("rank must be in [0, ranks) and ranks at least 1");
      const w::DlioWorkload workload = w::load_workload(path, overrides);
      const std::shared_ptr<pipelines::StorageContext> storage = w::s3_storage(workload, nullptr);
      const std::vector<std::string> files = w::training_files(workload, storage.get());
      pipelines::Spec spec = pipelines::parse_spec(w::loader_spec(workload, files, rank, ranks, samples), path);
      return PyPipeline(std::move(spec.dataset), std::move(spec.document), storage);
    } catch (const harness::InputError& e) {
      throw pipelines::SpecError(e.what());
    }
  }

  // A new pass over the pipeline (an epoch): the iterator is this object's until the next one.
  PyPipeline& iter() {
    py::gil_scoped_release release;
    stop();
    it_ = dataset_.iterate({.storage = storage_});
    if (autotune_) {  // autotune's online tuner moves the pass's knobs while it runs
      tuner_ = std::make_unique<autotune::OnlineTuner>(it_->model());
      tuner_->start();
    }
    return *this;
  }

  void set_autotune(bool on) { autotune_ = on; }
  bool autotune() const { return autotune_; }

  // Every knob of the current pass: its stage, name, value and bounds.
  py::list knobs() const {
    py::list out;
    if (!it_) return out;
    for (const pipelines::Node* node : it_->model().nodes())
      for (const pipelines::Knob* k : node->knobs()) {
        py::dict d;
        d["stage_key"] = node->key();
        d["stage"] = node->name();
        d["knob"] = k->name();
        d["value"] = k->value();
        d["min"] = k->min();
        d["max"] = k->max();
        out.append(std::move(d));
      }
    return out;
  }

  // Sets a knob of the current pass (clamped to its bounds, as the tuners set it); returns the
  // value it took.
  int64_t set_knob(const std::string& stage_key, const std::string& name, int64_t value) {
    if (!it_) throw std::invalid_argument("set_knob: no pass has started (iterate the pipeline first)");
    std::string there;
    for (const pipelines::Node* node : it_->model().nodes())
      for (pipelines::Knob* k : node->knobs()) {
        if (node->key() == stage_key && k->name() == name) return k->set(value);
        there += (there.empty() ? "" : ", ") + node->key() + " " + k->name();
      }
    throw std::invalid_argument("set_knob: no knob '" + name + "' at " + stage_key +
                                " (the knobs: " + (there.empty() ? "none" : there) + ")");
  }

  // What the online tuner changed in the current pass, in order.
  py::list tuner_changes() const {
    py::list out;
    if (!tuner_) return out;
    for (const autotune::KnobChange& c : tuner_->changes()) {
      py::dict d;
      d["time_ms"] = c.time_ms;
      d["stage_key"] = c.stage_key;
      d["stage"] = c.stage;
      d["knob"] = c.knob;
      d["old"] = c.old_value;
      d["new"] = c.new_value;
      d["reason"] = c.reason;
      out.append(std::move(d));
    }
    return out;
  }

  py::object next() {
    if (!it_) iter();
    std::optional<pipelines::Element> e;
    {
      py::gil_scoped_release release;
      e = it_->next();
    }
    if (!e) throw py::stop_iteration();
    if (e->size() == 1) return to_numpy(std::move((*e)[0]));
    py::tuple out(e->size());
    for (size_t i = 0; i < e->size(); ++i) out[i] = to_numpy(std::move((*e)[i]));
    return out;
  }

  // Each stage's statistics so far (the live model of the current pass).
  py::list stats() const {
    py::list out;
    if (!it_) return out;
    for (const pipelines::NodeSnapshot& s : it_->model().snapshot()) {
      py::dict d;
      d["key"] = s.key;
      d["op"] = s.op;
      d["name"] = s.name;
      d["elements"] = s.elements;
      d["wall_ns_per_element"] = s.wall_ns_per_element;
      d["cpu_share"] = s.cpu_share;
      d["blocked_ns"] = s.blocked_ns;
      d["buffered"] = s.buffered;
      d["buffer_capacity"] = s.buffer_capacity;
      d["bytes_read"] = s.bytes_read;
      d["files_opened"] = s.files_opened;
      d["read_mb_per_s"] = s.read_mb_per_s;
      py::dict knobs;
      for (const auto& [k, v] : s.knobs) knobs[py::str(k)] = v;
      d["knobs"] = knobs;
      out.append(std::move(d));
    }
    return out;
  }

  std::string spec() const { return document_.dump(2); }
  void close() {
    py::gil_scoped_release release;
    stop();
  }

 private:
  // The tuner lets go of the pass's model before the pass ends.
  void stop() {
    if (tuner_) {
      tuner_->stop();
      tuner_->detach();
      tuner_.reset();
    }
    it_.reset();
  }

  pipelines::Dataset dataset_;
  nlohmann::json document_;
  std::shared_ptr<const pipelines::StorageContext> storage_;  // an s3 workload's
  std::unique_ptr<pipelines::Iterator> it_;
  bool autotune_ = false;
  std::unique_ptr<autotune::OnlineTuner> tuner_;
};

}  // namespace

void bind_pipeline(py::module_& m) {
  // Translators are tried newest first: the subclass after its base.
  const auto& pipeline_error =
      py::register_exception<pipelines::PipelineError>(m, "PipelineError", PyExc_RuntimeError);
  py::register_exception<pipelines::InputDataError>(m, "InputDataError", pipeline_error.ptr());
  py::register_exception<pipelines::SpecError>(m, "SpecError", PyExc_ValueError);
  py::class_<PyPipeline>(m, "Pipeline", "A pipeprof pipeline (a JSON spec); iterate it for elements")
      .def_static("from_json", &PyPipeline::from_json_text, py::arg("text"),
                  py::arg("source") = "<spec>")
      .def_static("from_file", &PyPipeline::from_file, py::arg("path"))
      .def_static("from_workload", &PyPipeline::from_workload, py::arg("path"), py::arg("overrides"),
                  py::arg("rank"), py::arg("ranks"), py::arg("samples"))
      .def("__iter__", &PyPipeline::iter, py::return_value_policy::reference_internal)
      .def("__next__", &PyPipeline::next)
      .def("stats", &PyPipeline::stats)
      .def("knobs", &PyPipeline::knobs)
      .def("set_knob", &PyPipeline::set_knob, py::arg("stage_key"), py::arg("knob"), py::arg("value"))
      .def("tuner_changes", &PyPipeline::tuner_changes)
      .def_property("autotune", &PyPipeline::autotune, &PyPipeline::set_autotune)
      .def("close", &PyPipeline::close)
      .def_property_readonly("spec", &PyPipeline::spec);
}

}  // namespace pipeprof::python
