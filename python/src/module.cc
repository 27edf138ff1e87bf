// pipeprof's Python module, `pipeprof._pipeprof`: the clock, the spool a DataLoader worker writes
// its spans to, and the loop's watch session. The Python package (python/pipeprof/) builds
// `pipeprof.watch` on these.
#include <pybind11/pybind11.h>
#include <pybind11/stl/filesystem.h>

#include "pipeprof/trace/chrome_json.h"
#include "pipeprof/trace/clock.h"
#include "pipeprof/trace/spool.h"
#include "watch_session.h"

namespace py = pybind11;
using pipeprof::python::WatchSession;
using pipeprof::trace::SpoolWriter;

PYBIND11_MODULE(_pipeprof, m) {
  m.doc() = "pipeprof's compiled core (use the pipeprof package)";
  py::register_exception<pipeprof::trace::TraceFormatError>(m, "TraceFormatError", PyExc_ValueError);

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
      .def_property_readonly("spans", &WatchSession::spans);
}
