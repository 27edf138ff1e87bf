#include "pipeprof/viewer/document.h"

#include <exception>
#include <new>

#include "pipeprof/trace/chrome_json.h"

namespace pipeprof::viewer {

std::unique_ptr<Document> make_document(trace::Trace trace, std::string title, std::string path) {
  auto doc = std::make_unique<Document>();
  doc->title = std::move(title);
  doc->path = std::move(path);
  doc->trace = std::move(trace);
  doc->lanes.reserve(doc->trace.lanes.size());
  for (const trace::Lane& lane : doc->trace.lanes)
    doc->lanes.emplace_back(lane);
  doc->counters.reserve(doc->trace.counters.size());
  for (const trace::Counter& counter : doc->trace.counters)
    doc->counters.emplace_back(counter);
  doc->flows = FlowIndex(doc->trace.flows);
  return doc;
}

LoadResult load_document(const std::filesystem::path& path) {
  LoadResult result;
  try {
    trace::Trace t = trace::load_chrome_json(path);
    result.document = make_document(std::move(t), path.filename().string(), path.string());
  } catch (const trace::TraceFormatError& e) {
    result.error = e.what();  // "<file>: byte <offset>: <what was expected>"
  } catch (const std::bad_alloc&) {
    result.error = path.string() + ": out of memory while reading the trace";
  } catch (const std::exception& e) {
    const std::string what = e.what();
    result.error =
        what.find(path.string()) != std::string::npos ? what : path.string() + ": " + what;
  }
  return result;
}

}  // namespace pipeprof::viewer
