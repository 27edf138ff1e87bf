// pipeprof's Python module, `pipeprof._pipeprof`: the clock, the spool a DataLoader worker writes
// its spans to, and the loop's watch session. The Python package (harness/python/pipeprof/) builds
// `pipeprof.watch` on these.
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include "pipeprof/autotune/offline_tuner.h"

#include "pipeprof/results/results_error.h"
#include "pipeprof/trace/chrome_json.h"
#include "pipeprof/trace/clock.h"
#include "pipeprof/trace/spool.h"
#include "pipeline_binding.h"
#include "watch_session.h"

namespace py = pybind11;
namespace autotune = pipeprof::autotune;
using pipeprof::python::WatchSession;
using pipeprof::trace::SpoolWriter;

namespace {

// autotune's offline search over a space the caller describes: each knob a name with `count`
// values (their indexes are what the search moves) and a starting index; `trial` measures a point
// (a dict of name -> index) and returns (wall_ms, wait_ms) or raises. A trial that raises an
// Exception is a failed trial (never chosen); KeyboardInterrupt and SystemExit end the search.
py::dict tune_space(const std::vector<std::tuple<std::string, int64_t, int64_t>>& space,
                    const py::function& trial, const std::string& strategy,
                    const std::string& objective, int budget, int repeats, uint64_t seed,
                    const py::object& on_trial) {
  std::vector<autotune::KnobSpec> knobs;
  for (const auto& [name, count, initial] : space) {
    if (count < 1) throw std::invalid_argument("the knob " + name + " has no values");
    autotune::KnobSpec k;
    k.path = name;
    k.stage = "DataLoader";
    k.knob = name;
    for (int64_t i = 0; i < count; ++i)
      k.values.push_back(i);
    k.initial = std::clamp<int64_t>(initial, 0, count - 1);
    knobs.push_back(std::move(k));
  }
  autotune::OfflineOptions options;
  options.strategy = autotune::parse_strategy(strategy);
  options.objective = autotune::parse_objective(objective);
  options.budget = budget;
  options.repeats = std::max(1, repeats);
  options.max_repeats = std::max(options.repeats, 2 * options.repeats);
  options.seed = seed;
  if (!on_trial.is_none())
    options.on_trial = [&](const autotune::Trial& t) {
      py::dict knobs_now;
      for (const auto& [k, v] : t.knobs) knobs_now[py::str(k)] = v;
      on_trial(t.index, knobs_now, t.measurement.wall_ms, t.measurement.wait_ms, t.measurement.ok,
               t.measurement.error, t.phase);
    };
  const autotune::TrialFn fn = [&](const autotune::KnobAssignment& a) {
    py::dict point;
    for (const auto& [k, v] : a) point[py::str(k)] = v;
    autotune::Measurement m;
    try {
      const py::tuple r = trial(point);
      m.wall_ms = r[0].cast<double>();
      m.wait_ms = r[1].cast<double>();
    } catch (py::error_already_set& e) {
      if (e.matches(PyExc_KeyboardInterrupt) || e.matches(PyExc_SystemExit)) throw;
      m.ok = false;
      m.error = e.what();
    }
    return m;
  };
  const autotune::OfflineResult r = autotune::tune_offline(knobs, fn, options);
  py::dict out;
  py::dict best;
  for (const auto& [k, v] : r.best) best[py::str(k)] = v;
  out["best"] = best;
  out["best_value"] = r.best_value;
  out["stopped"] = r.stopped;
  out["trials"] = static_cast<int64_t>(r.trials.size());
  return out;
}

}  // namespace

PYBIND11_MODULE(_pipeprof, m) {
  m.doc() = "pipeprof's compiled core (use the pipeprof package)";
  py::register_exception<pipeprof::trace::TraceFormatError>(m, "TraceFormatError", PyExc_ValueError);
  py::register_exception<pipeprof::results::ResultsError>(m, "ResultsError", PyExc_ValueError);

  m.def("tune_space", &tune_space, py::arg("space"), py::arg("trial"), py::arg("strategy"),
        py::arg("objective"), py::arg("budget"), py::arg("repeats"), py::arg("seed"),
        py::arg("on_trial") = py::none(),
        "autotune's offline search (hill, random or grid) over indexed knobs, measured by `trial`");
  pipeprof::python::bind_pipeline(m);
  m.def("now_ns", &pipeprof::trace::now_ns,
        "CLOCK_MONOTONIC in nanoseconds: pipeprof's clock (time.monotonic_ns() reads the same)");

  py::class_<SpoolWriter>(m, "SpoolWriter",
                          "Spans of this process, appended to a file the watching process reads")
      .def(py::init<const std::filesystem::path&, std::string_view>(), py::arg("path"),
           py::arg("process_name"))
      .def("name", &SpoolWriter::name, py::arg("text"))
      .def("thread_name", &SpoolWriter::thread_name, py::arg("tid"), py::arg("name"))
      .def("span", &SpoolWriter::span, py::arg("name"), py::arg("category"), py::arg("tid"),
           py::arg("start_ns"), py::arg("end_ns"))
      .def("instant", &SpoolWriter::instant, py::arg("name"), py::arg("category"), py::arg("tid"),
           py::arg("ts_ns"))
      .def("flush", &SpoolWriter::flush)
      .def("set_flush_interval_ns", &SpoolWriter::set_flush_interval_ns)
      .def_property_readonly("events", &SpoolWriter::events);

  py::class_<WatchSession>(m, "WatchSession", "The loop's side of pipeprof.watch")
      .def(py::init<std::filesystem::path, int64_t>(), py::arg("spool_dir"), py::arg("loop_tid"))
      .def("loop_span", &WatchSession::loop_span, py::arg("name"), py::arg("start_ns"),
           py::arg("end_ns"))
      .def("thread_span", &WatchSession::thread_span, py::arg("tid"), py::arg("lane"),
           py::arg("name"), py::arg("category"), py::arg("start_ns"), py::arg("end_ns"))
      .def("instant", &WatchSession::instant, py::arg("name"), py::arg("ts_ns"))
      .def("set_metadata", &WatchSession::set_metadata, py::arg("key"), py::arg("value"))
      .def("poll", &WatchSession::poll, py::call_guard<py::gil_scoped_release>())
      .def("analyze", &WatchSession::analyze, py::arg("since_ns") = 0,
           py::call_guard<py::gil_scoped_release>())
      .def("write_trace", &WatchSession::write_trace, py::arg("path"),
           py::call_guard<py::gil_scoped_release>())
      .def("end_epoch", &WatchSession::end_epoch, py::arg("samples"), py::arg("cpu_ms"),
           py::arg("peak_rss_kb"))
      .def("write_results", &WatchSession::write_results, py::arg("path"), py::arg("id"),
           py::arg("description"), py::arg("trace"), py::arg("interrupted"),
           py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("spans", &WatchSession::spans);
}
