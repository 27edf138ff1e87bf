// Chrome Trace Event JSON reader on simdjson's On-Demand API: one forward pass over the document,
// every value validated (skipped values included, so the writer never re-emits broken JSON), the
// events handed to TraceBuilder. Errors carry the byte offset simdjson stopped at, or the start of
// the event whose content is wrong.
//
// Choices: timestamps are read from the number's text (exact to the nanosecond, even for
// epoch-based microseconds that a double cannot hold); "X" needs ts and dur >= 0; an "E" without a
// "B" is an error, a "B" without an "E" is closed at the end of the trace (metadata
// "unclosed_spans" counts them); unknown phases are ignored; a counter's "value" series is named
// after the event, any other key k as "<name>.<k>".
#include <simdjson.h>

#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <stop_token>
#include <thread>
#include <optional>
#include <vector>

#include "json_text.h"
#include "padded_buffer.h"
#include "text_source.h"
#include "pipeprof/trace/chrome_json.h"
#include "trace_builder.h"

namespace pipeprof::trace {
namespace {

namespace od = simdjson::ondemand;
namespace jt = json_text;

std::string_view trim_right(std::string_view s) {
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\n' || s.back() == '\r' || s.back() == '\t'))
    s.remove_suffix(1);
  return s;
}

bool is_gpu_category(std::string_view cat) {
  return cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset" ||
         cat == "gpu_user_annotation" || cat == "gpu" || cat == "cuda_sync" || cat == "Kernel" ||
         cat == "Memcpy" || cat == "Memset";
}

bool is_kineto_category(std::string_view cat) {
  return cat == "ac2g" || cat == "kernel" || cat == "cuda_runtime" || cat == "cpu_op" ||
         cat == "gpu_memcpy" || cat == "cuda_driver" || cat == "python_function";
}

// The fields of one event that the model uses; string views point into the parser's buffers.
struct EventFields {
  std::optional<std::string_view> ph, name, cat, bp;
  int64_t pid = 0, tid = 0;
  std::string_view pid_text, tid_text;  // set when given as strings
  std::optional<int64_t> ts, dur;
  std::optional<uint64_t> id;
  bool has_args = false;
  std::string_view args_raw;
  std::vector<std::pair<std::string_view, std::string_view>> numeric_args;  // top level: text
  std::optional<std::string_view> arg_name;  // top-level "name" string

  void clear() {
    ph = name = cat = bp = std::nullopt;
    pid = tid = 0;
    pid_text = tid_text = {};
    ts = dur = std::nullopt;
    id = std::nullopt;
    has_args = false;
    args_raw = {};
    numeric_args.clear();
    arg_name = std::nullopt;
  }
  std::optional<double> numeric_arg(std::string_view key) const {
    for (const auto& [k, text] : numeric_args)
      if (k == key) return to_double(text);
    return std::nullopt;
  }
  static std::optional<double> to_double(std::string_view text) {
    double v = 0;
    const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
    if (r.ec != std::errc() || !std::isfinite(v)) return std::nullopt;
    return v;
  }
};

class Reader {
 public:
  static constexpr int kMaxDepth = 256;  // nesting inside an event's values (recursion bound)

  Reader(std::string source, const ReadOptions& options)
      : source_(std::move(source)), builder_(source_), keep_args_(options.keep_args) {}

  // A whole trace, or the last part of a streamed one: its top level with the events not read
  // yet (read_chunk has read the others).
  Trace run(simdjson::padded_string_view json) {
    json_ = json;
    if (json_.size() == 0) throw TraceFormatError(source_, 0, "empty input: expected a JSON trace");
    od::document doc;
    if (const auto err = parser_.iterate(json_).get(doc)) stage1_error(err);
    doc_ = &doc;
    try {
      const od::json_type type = doc.type();
      if (type == od::json_type::array) {
        read_events(doc.get_array());
      } else if (type == od::json_type::object) {
        read_top_object(doc.get_object());
      } else {
        fail(location(), "expected a JSON object with \"traceEvents\" or an array of events");
      }
      const char* rest = nullptr;
      if (doc.current_location().get(rest) == simdjson::SUCCESS)
        fail(offset_of(rest), "unexpected content after the end of the trace");
    } catch (const simdjson::simdjson_error& e) {
      if (e.error() == simdjson::INCOMPLETE_ARRAY_OR_OBJECT)  // where it ends: there is no other place
        fail(json_.size(), "the JSON ends inside an object or array (truncated input?)");
      std::string what = std::string("malformed JSON: ") + simdjson::error_message(e.error());
      if (in_event_) what += " (in traceEvents[" + std::to_string(event_index_) + "])";
      throw TraceFormatError(source_, location(), what);
    }
    doc_ = nullptr;
    if (!format_given_) builder_.metadata("format", kineto_ ? "kineto" : "chrome");
    return std::move(builder_).finish();
  }

  // A streamed part: an array of whole events ("[" + events + "]"). False when simdjson's first
  // stage finds a string that does not end (the part was cut inside a string; nothing was read).
  // Errors throw as in run(), their offsets within the part.
  bool read_chunk(simdjson::padded_string_view json) {
    json_ = json;
    od::document doc;
    if (const auto err = parser_.iterate(json_).get(doc)) {
      if (err == simdjson::UNCLOSED_STRING) return false;
      stage1_error(err);
    }
    doc_ = &doc;
    read_events(doc.get_array());
    const char* rest = nullptr;
    if (doc.current_location().get(rest) == simdjson::SUCCESS)
      fail(offset_of(rest), "unexpected content after a part of the events");
    doc_ = nullptr;
    return true;
  }

 private:
  [[noreturn]] void fail(uint64_t offset, const std::string& what) {
    throw TraceFormatError(source_, offset, what);
  }
  [[noreturn]] void fail_event(const std::string& what) {
    fail(event_offset_, "traceEvents[" + std::to_string(event_index_) + "]: " + what);
  }

  [[noreturn]] void stage1_error(simdjson::error_code err) {
    const std::string_view text(json_.data(), json_.size());
    if (err == simdjson::UTF8_ERROR) {
      const auto at = jt::first_invalid_utf8(text);
      fail(at.value_or(0), "invalid UTF-8");
    }
    if (err == simdjson::UNCLOSED_STRING)
      fail(json_.size(), "unterminated string (truncated input?)");
    if (err == simdjson::EMPTY) fail(0, "empty input: expected a JSON trace");
    if (err == simdjson::INCOMPLETE_ARRAY_OR_OBJECT)
      fail(json_.size(), "the JSON ends inside an object or array (truncated input?)");
    fail(0, std::string("malformed JSON: ") + simdjson::error_message(err));
  }

  uint64_t location() {
    if (doc_ == nullptr) return 0;
    const char* p = nullptr;
    if (doc_->current_location().get(p) != simdjson::SUCCESS || p == nullptr) return json_.size();
    if (p < json_.data() || p > json_.data() + json_.size()) return json_.size();
    return static_cast<uint64_t>(p - json_.data());
  }
  uint64_t offset_of(const char* p) const {
    return p >= json_.data() && p <= json_.data() + json_.size()
               ? static_cast<uint64_t>(p - json_.data())
               : 0;
  }

  void read_top_object(od::object top) {
    for (auto field : top) {
      const std::string_view key = field.unescaped_key();
      od::value v = field.value();
      if (key == "traceEvents") {
        if (v.type() != od::json_type::array) fail(location(), "\"traceEvents\" must be an array");
        saw_events_array_ = true;
        read_events(v.get_array());
      } else if (key == "otherData") {
        if (v.type() != od::json_type::object) fail(location(), "\"otherData\" must be an object");
        read_other_data(v.get_object());
      } else {
        if (key == "deviceProperties" || key == "schemaVersion") kineto_ = true;
        validate(v);
      }
    }
    if (!saw_events_array_) fail(0, "no \"traceEvents\" array in the trace object");
  }

  void read_other_data(od::object obj) {
    for (auto field : obj) {
      std::string key(field.unescaped_key().value());
      od::value v = field.value();
      const od::json_type type = v.type();
      std::string value;
      if (type == od::json_type::string) {
        value = std::string(v.get_string().value());
      } else if (type == od::json_type::object) {
        od::object o = v.get_object();
        value = std::string(o.raw_json().value());
      } else if (type == od::json_type::array) {
        od::array a = v.get_array();
        value = std::string(a.raw_json().value());
      } else {
        value = std::string(trim_right(v.raw_json_token()));
        validate(v);
      }
      if (key == "format") format_given_ = true;
      builder_.metadata(std::move(key), std::move(value));
    }
  }

  // Checks that a value is well-formed JSON all the way down. Scalars are checked from their text
  // (simdjson's first stage has already validated UTF-8, control characters and string bounds),
  // which is cheaper than converting them.
  void validate(od::value v, int depth = 0) {
    const od::json_type type = v.type();
    if ((type == od::json_type::array || type == od::json_type::object) && depth >= kMaxDepth)
      fail(location(), "values nested deeper than " + std::to_string(kMaxDepth) + " levels");
    switch (type) {
      case od::json_type::array:
        for (auto element : v.get_array())
          validate(element.value(), depth + 1);
        break;
      case od::json_type::object:
        for (auto field : v.get_object()) {
          (void)key_text(field);
          validate(field.value(), depth + 1);
        }
        break;
      default:
        (void)check_scalar(v);
    }
  }

  // The text of a scalar (trimmed); an error when it is not a JSON string, number or literal.
  std::string_view check_scalar(od::value& v) {
    const std::string_view token = trim_right(v.raw_json_token());
    bool ok = false;
    switch (token.empty() ? '\0' : token.front()) {
      case '"':
        ok = token.size() >= 2 && token.back() == '"' &&
             escapes_ok(token.substr(1, token.size() - 2));
        break;
      case 't':
        ok = token == "true";
        break;
      case 'f':
        ok = token == "false";
        break;
      case 'n':
        ok = token == "null";
        break;
      default:
        ok = jt::is_number(token);
    }
    if (!ok)
      fail(offset_of(token.data()),
           "malformed JSON value: " +
               std::string(token.substr(0, std::min<size_t>(token.size(), 40))));
    return token;
  }

  bool escapes_ok(std::string_view inner) {
    if (inner.find('\\') == std::string_view::npos) return true;
    scratch_.clear();
    return jt::unescape(inner, scratch_);
  }

  // A field's key without a copy (keys with escapes are unescaped into storage that lives until
  // the next event).
  std::string_view key_text(simdjson::simdjson_result<od::field>& field) {
    const od::raw_json_string raw = field.key();
    const char* p = raw.raw();
    const char* end = json_.data() + json_.size();
    const char* q = p;
    for (;;) {
      q = static_cast<const char*>(std::memchr(q, '"', static_cast<size_t>(end - q)));
      if (q == nullptr) fail(offset_of(p), "unterminated key");
      ptrdiff_t backslashes = 0;
      while (q - backslashes > p && q[-1 - backslashes] == '\\')
        ++backslashes;
      if (backslashes % 2 == 0) break;
      ++q;
    }
    const std::string_view inner(p, static_cast<size_t>(q - p));
    if (inner.find('\\') == std::string_view::npos) return inner;
    std::string& unescaped = key_storage_.emplace_back();
    if (!jt::unescape(inner, unescaped)) fail(offset_of(p), "invalid escape in a key");
    return unescaped;
  }

  void read_events(od::array events) {
    for (auto element : events) {
      od::value v = element.value();
      in_event_ = true;
      event_offset_ = location();
      if (v.type() != od::json_type::object) fail_event("an event must be a JSON object");
      e_.clear();
      if (collected_ == nullptr) key_storage_.clear();  // collected events' keys live with the part
      for (auto field : v.get_object()) {
        const std::string_view key = key_text(field);
        read_field(key, field.value());
      }
      if (collected_ != nullptr) {
        collect();
      } else {
        handle_event();
      }
      in_event_ = false;
      ++event_index_;
    }
  }

  // The event just read into the part's list (its element's vector capacity is kept for reuse).
  void collect() {
    if (collected_count_ < collected_->size()) {
      std::swap((*collected_)[collected_count_], e_);
    } else {
      collected_->push_back(e_);
    }
    ++collected_count_;
  }

 public:
  // Reads a part's events ("[" + events + "]") into `events` (its first `count` elements) without
  // handling them: their views point into the part's text and this reader's parser, so both must
  // stay as they are until handle() has taken every one. False: the part was cut inside a string.
  bool collect_chunk(simdjson::padded_string_view json, std::vector<EventFields>& events, size_t& count) {
    collected_ = &events;
    collected_count_ = 0;
    key_storage_.clear();
    struct Reset {
      Reader* r;
      ~Reset() { r->collected_ = nullptr; }
    } reset{this};
    const bool read = read_chunk(json);
    count = collected_count_;
    return read;
  }

  // Handles an event another reader collected, as if read here (in the trace's order).
  void handle(EventFields& event) {
    std::swap(e_, event);
    handle_event();
    ++event_index_;
  }

 private:

  std::string_view string_field(od::value v, const char* key) {
    if (v.type() != od::json_type::string)
      fail_event(std::string("\"") + key + "\" must be a string");
    return v.get_string();
  }

  int64_t time_field(od::value v, const char* key) {
    std::string_view text;
    const od::json_type type = v.type();
    if (type == od::json_type::number) {
      text = trim_right(v.raw_json_token());  // checked by parse_us_to_ns
    } else if (type == od::json_type::string) {
      text = v.get_string();
    } else {
      fail_event(std::string("\"") + key + "\" must be a number of microseconds");
    }
    const auto ns = jt::parse_us_to_ns(text);
    if (!ns)
      fail_event(std::string("\"") + key +
                 "\" is not a number of microseconds within +-292 years: " +
                 std::string(text.substr(0, 64)));
    return *ns;
  }

  // pid/tid: an integer, or a string (a number in text, or a name such as "stream 7").
  int64_t id_field(od::value v, const char* key, std::string_view& text) {
    const od::json_type type = v.type();
    if (type == od::json_type::number) {
      int64_t n = 0;
      if (v.get_int64().get(n) != simdjson::SUCCESS)
        fail_event(std::string("\"") + key + "\" must be an integer or a string");
      return n;
    }
    if (type == od::json_type::string) {
      text = v.get_string();
      return 0;
    }
    fail_event(std::string("\"") + key + "\" must be an integer or a string");
  }

  uint64_t flow_id_field(od::value v) {
    const od::json_type type = v.type();
    if (type == od::json_type::number) {
      uint64_t u = 0;
      if (v.get_uint64().get(u) == simdjson::SUCCESS) return u;
      int64_t n = 0;
      if (v.get_int64().get(n) == simdjson::SUCCESS) return static_cast<uint64_t>(n);
      fail_event("\"id\" must be an integer or a string");
    }
    if (type == od::json_type::string) {
      const std::string_view s = v.get_string();
      if (const auto n = jt::parse_integer(s)) return static_cast<uint64_t>(*n);
      return std::hash<std::string_view>{}(s);
    }
    fail_event("\"id\" must be an integer or a string");
  }

  void read_args(od::value v) {
    if (v.type() != od::json_type::object) fail_event("\"args\" must be an object");
    const char* start = json_.data() + location();
    for (auto field : v.get_object()) {
      const std::string_view key = key_text(field);
      od::value value = field.value();
      const od::json_type type = value.type();
      if (type == od::json_type::number) {
        e_.numeric_args.emplace_back(key, check_scalar(value));
      } else if (type == od::json_type::string && key == "name") {
        e_.arg_name = value.get_string().value();
      } else {
        validate(value);
      }
    }
    const char* end = json_.data() + location();
    e_.has_args = true;
    e_.args_raw = trim_right(std::string_view(start, static_cast<size_t>(end - start)));
  }

  void read_field(std::string_view key, od::value v) {
    if (key.size() == 2) {
      if (key == "ph") return void(e_.ph = string_field(v, "ph"));
      if (key == "ts") return void(e_.ts = time_field(v, "ts"));
      if (key == "id") return void(e_.id = flow_id_field(v));
      if (key == "bp") return void(e_.bp = string_field(v, "bp"));
    } else if (key.size() == 3) {
      if (key == "pid") return void(e_.pid = id_field(v, "pid", e_.pid_text));
      if (key == "tid") return void(e_.tid = id_field(v, "tid", e_.tid_text));
      if (key == "cat") return void(e_.cat = string_field(v, "cat"));
      if (key == "dur") return void(e_.dur = time_field(v, "dur"));
    } else if (key == "name") {
      return void(e_.name = string_field(v, "name"));
    } else if (key == "args") {
      return read_args(v);
    }
    validate(v);
  }

  StrId intern(const std::optional<std::string_view>& s) {
    return s ? builder_.strings().intern(*s) : kNoStr;
  }
  uint32_t args_index() {
    if (!keep_args_ || !e_.has_args || e_.args_raw.size() <= 2) return kNoArgs;  // absent or {}
    return builder_.add_args(e_.args_raw);
  }
  int64_t need_ts() {
    if (!e_.ts) fail_event("\"ts\" is missing");
    return *e_.ts;
  }

  void handle_event() {
    if (!e_.ph) fail_event("\"ph\" (the event's phase) is missing");
    if (!e_.pid_text.empty()) e_.pid = builder_.pid_from_string(e_.pid_text);
    if (!e_.tid_text.empty()) e_.tid = builder_.tid_from_string(e_.pid, e_.tid_text);
    const bool gpu = e_.cat && is_gpu_category(*e_.cat);
    if (e_.cat && is_kineto_category(*e_.cat)) kineto_ = true;
    const std::string_view ph = *e_.ph;
    if (ph.size() != 1) return;  // unknown phase: ignored
    switch (ph[0]) {
      case 'X':
        return complete_event(gpu);
      case 'B': {
        const uint32_t lane = builder_.lane(e_.pid, e_.tid);
        if (!gpu) builder_.note_host_span(lane);
        return builder_.begin(lane, need_ts(), intern(e_.name), intern(e_.cat), args_index());
      }
      case 'E': {
        const uint32_t lane = builder_.lane(e_.pid, e_.tid);
        return builder_.end(lane, need_ts(), args_index(), event_offset_);
      }
      case 'i':
      case 'I':
      case 'n': {
        Instant i;
        i.ts_ns = need_ts();
        i.name = intern(e_.name);
        i.category = intern(e_.cat);
        i.args = args_index();
        return builder_.add_instant(builder_.lane(e_.pid, e_.tid), i);
      }
      case 'C':
        return counter_event();
      case 'M':
        return metadata_event();
      case 's':
      case 't':
      case 'f':
        return flow_event(ph[0]);
      default:
        return;  // other phases (async b/e, objects, samples, ...) are not modelled
    }
  }

  void complete_event(bool gpu) {
    Span s;
    s.start_ns = need_ts();
    if (!e_.dur) fail_event("complete event (ph \"X\") has no \"dur\"");
    if (*e_.dur < 0) fail_event("\"dur\" is negative");
    if (s.start_ns > 0 && *e_.dur > std::numeric_limits<int64_t>::max() - s.start_ns)
      fail_event("\"ts\" + \"dur\" is out of range");
    s.dur_ns = *e_.dur;
    s.name = intern(e_.name);
    s.category = intern(e_.cat);
    s.args = args_index();
    const uint32_t lane = builder_.lane(e_.pid, e_.tid);
    if (gpu) {
      const auto stream = e_.numeric_arg("stream");
      if (stream && *stream >= 0 && *stream == std::floor(*stream) && *stream < 9e18) {
        const auto device = e_.numeric_arg("device");
        const bool device_ok = device && *device >= 0 && *device < 1e9;
        builder_.mark_gpu(lane, device_ok ? static_cast<int32_t>(*device) : 0,
                          static_cast<int64_t>(*stream),
                          *e_.cat == "cuda_sync" ? TraceBuilder::GpuMark::kSync
                                                 : TraceBuilder::GpuMark::kDeviceWork);
      }
    } else {
      builder_.note_host_span(lane);  // only a CPU thread records spans of other categories
    }
    builder_.add_span(lane, s);
  }

  void counter_event() {
    const int64_t ts = need_ts();
    const std::string_view name = e_.name.value_or("");
    builder_.note_process(e_.pid);
    for (const auto& [key, text] : e_.numeric_args) {
      const auto parsed = EventFields::to_double(text);
      if (!parsed) fail_event("counter \"" + std::string(key) + "\" is out of range");
      const double value = *parsed;
      if (key == "value") {
        builder_.counter(e_.pid, name, ts, value);
      } else {
        series_name_.assign(name);
        if (!series_name_.empty()) series_name_.push_back('.');
        series_name_.append(key);
        builder_.counter(e_.pid, series_name_, ts, value);
      }
    }
  }

  void metadata_event() {
    const std::string_view kind = e_.name.value_or("");
    if (kind == "process_name" || kind == "thread_name") {
      if (!e_.arg_name) return;
      if (kind == "process_name") return builder_.process_name(e_.pid, *e_.arg_name);
      builder_.thread_name(e_.pid, e_.tid, *e_.arg_name);
      const auto device = e_.numeric_arg("device");
      const auto stream = e_.numeric_arg("stream");
      if (device && stream && *device >= 0 && *device < 1e9 && *stream >= -1 && *stream < 9e18)
        builder_.mark_gpu(builder_.lane(e_.pid, e_.tid), static_cast<int32_t>(*device),
                          static_cast<int64_t>(*stream), TraceBuilder::GpuMark::kMetadata);
      return;
    }
    if (kind == "process_sort_index" || kind == "thread_sort_index") {
      const auto index = e_.numeric_arg("sort_index");
      if (!index || !(std::fabs(*index) < 9e18)) return;
      if (kind == "process_sort_index")
        return builder_.process_sort_index(e_.pid, static_cast<int64_t>(*index));
      builder_.thread_sort_index(e_.pid, e_.tid, static_cast<int64_t>(*index));
    }
  }

  void flow_event(char ph) {
    const int64_t ts = need_ts();
    if (!e_.id) fail_event("flow event (ph \"" + std::string(1, ph) + "\") has no \"id\"");
    const FlowPhase phase = ph == 's'   ? FlowPhase::kStart
                            : ph == 't' ? FlowPhase::kStep
                                        : FlowPhase::kFinish;
    builder_.flow(phase, *e_.id, intern(e_.cat), intern(e_.name), builder_.lane(e_.pid, e_.tid),
                  ts);
  }

  std::string source_;
  simdjson::padded_string_view json_;
  od::parser parser_;
  od::document* doc_ = nullptr;
  TraceBuilder builder_;
  bool keep_args_ = true;
  EventFields e_;
  std::deque<std::string> key_storage_;
  std::vector<EventFields>* collected_ = nullptr;  // collect_chunk's list
  size_t collected_count_ = 0;
  std::string scratch_;
  std::string series_name_;
  uint64_t event_offset_ = 0;
  uint64_t event_index_ = 0;
  bool in_event_ = false;
  bool saw_events_array_ = false;
  bool format_given_ = false;
  bool kineto_ = false;
};

// Reading a trace file a part at a time, so that memory holds the model and a part or two of the
// text rather than the whole text and simdjson's index of it.
//
// The top level up to the events ("[" or {"...": ..., "traceEvents": [) is found in the first
// bytes and checked; then the events are read in parts of about part_bytes: a part ends after an
// event's "}" followed by "," and the next event's "{". The last such place in the part is taken;
// when it falls inside a string (one holding "}, {"), simdjson's first stage finds a string that
// does not end before any event is read, and the last such place outside strings is taken
// instead (a scan of the part's strings). What is left when the text ends (the last
// events and the rest of the top level) is read with the top level's beginning as one document,
// through the same code as a whole trace. Anything this does not expect (NotStreamable) and any
// error read the file again whole, so that messages and offsets are those of a whole read.
struct NotStreamable {};

constexpr size_t kMostPrefixBytes = size_t{64} << 20;  // the top level before "traceEvents"
constexpr size_t kMostPartBytes = size_t{1} << 30;     // one event (or cut) larger: read whole

// Text read so far, with simdjson's padding behind it; grows as needed.
class Window {
 public:
  explicit Window(size_t part_bytes) : part_bytes_(part_bytes) { reserve(part_bytes + 1); }
  size_t part_bytes() const { return part_bytes_; }
  char* data() { return data_.get(); }
  size_t size() const { return size_; }
  char& operator[](size_t i) { return data_[i]; }
  // The text in [0, size) with all the allocation behind it as padding.
  simdjson::padded_string_view view(size_t size) {
    return simdjson::padded_string_view(data_.get(), size, capacity_ + PaddedBuffer::kPadding);
  }
  // Reads until the window holds `target` bytes or the text ends; false once it has ended.
  bool fill(TextSource& source, size_t target) {
    if (target > capacity_) reserve(std::max(target, capacity_ * 2));
    while (size_ < target) {
      const size_t got = source.read(data_.get() + size_, target - size_);
      if (got == 0) return false;
      size_ += got;
    }
    return true;
  }
  // Drops the first n bytes.
  void drop_front(size_t n) {
    std::memmove(data_.get(), data_.get() + n, size_ - n);
    size_ -= n;
  }

 private:
  void reserve(size_t capacity) {
    std::unique_ptr<char[]> grown(new char[capacity + PaddedBuffer::kPadding]());  // padding zeroed
    if (size_ > 0) std::memcpy(grown.get(), data_.get(), size_);
    data_ = std::move(grown);
    capacity_ = capacity;
  }
  size_t part_bytes_;
  std::unique_ptr<char[]> data_;
  size_t size_ = 0, capacity_ = 0;
};

bool is_space(char c) {
  return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

// The top level before the events, ending in "[", is a JSON object whose last key is traceEvents.
void check_prefix(std::string_view prefix) {
  simdjson::padded_string doc(std::string(prefix) + "]}");
  od::parser parser;
  od::document d;
  if (parser.iterate(doc).get(d) != simdjson::SUCCESS) throw NotStreamable{};
  try {
    std::string last;
    for (auto field : d.get_object())
      last = std::string(field.unescaped_key().value());
    if (last != "traceEvents") throw NotStreamable{};
  } catch (const simdjson::simdjson_error&) {
    throw NotStreamable{};
  }
}

// Where the top level's events begin (the byte after their "["), reading more as needed.
size_t find_events(Window& w, TextSource& source, bool& more) {
  size_t i = 0;
  while (i < w.size() && is_space(w[i]))
    ++i;
  if (i == w.size()) throw NotStreamable{};
  if (w[i] == '[') return i + 1;
  if (w[i] != '{') throw NotStreamable{};
  static constexpr std::string_view kKey = "\"traceEvents\"";
  size_t from = i;
  while (true) {
    const std::string_view text(w.data(), w.size());
    const size_t at = text.find(kKey, from);
    if (at == std::string_view::npos) {
      if (!more || w.size() >= kMostPrefixBytes) throw NotStreamable{};
      from = w.size() >= kKey.size() ? w.size() - kKey.size() : 0;
      more = w.fill(source, w.size() + w.part_bytes());
      continue;
    }
    // The key, blanks, ":", blanks, "[" (a few bytes, perhaps not read yet).
    size_t j = at + kKey.size();
    bool colon = false;
    while (true) {
      if (j == w.size()) {
        if (!more) throw NotStreamable{};
        more = w.fill(source, w.size() + 4096);
        continue;
      }
      const char c = w[j];
      if (is_space(c)) {
        ++j;
      } else if (c == ':' && !colon) {
        colon = true;
        ++j;
      } else if (c == '[' && colon) {
        check_prefix(std::string_view(w.data(), j + 1));
        return j + 1;
      } else {
        break;  // "traceEvents" in a string, or not an array: the next one
      }
    }
    from = at + 1;
  }
}

// The last place in [lo, hi) where an event ends and the next begins: "}", blanks, ",", blanks,
// "{". close: the byte after the "}"; next: the "{".
struct Cut {
  size_t close = 0, next = 0;
};
std::optional<Cut> last_cut(const char* text, size_t lo, size_t hi) {
  while (hi > lo) {
    const void* found = ::memrchr(text + lo, '{', hi - lo);
    if (found == nullptr) return std::nullopt;
    const size_t q = static_cast<size_t>(static_cast<const char*>(found) - text);
    size_t p = q;
    while (p > lo && is_space(text[p - 1]))
      --p;
    if (p > lo && text[p - 1] == ',') {
      --p;
      while (p > lo && is_space(text[p - 1]))
        --p;
      if (p > lo && text[p - 1] == '}') return Cut{p, q};
    }
    hi = q;
  }
  return std::nullopt;
}

// The last cut in [lo, hi) outside strings, from a scan of the strings from lo (where no string
// is open): for a part whose last cut fell inside one.
std::optional<Cut> last_cut_outside_strings(Window& w, size_t lo, size_t hi) {
  std::optional<Cut> cut;
  bool in_string = false;
  for (size_t i = lo; i < hi; ++i) {
    const char c = w[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '}') {
      size_t j = i + 1;
      while (j < hi && is_space(w[j]))
        ++j;
      if (j < hi && w[j] == ',') {
        ++j;
        while (j < hi && is_space(w[j]))
          ++j;
        if (j < hi && w[j] == '{') cut = Cut{i + 1, j};
      }
    }
  }
  return cut;
}

// The text up to the events read and checked; the window holds "[" and the events' first bytes.
struct Start {
  std::unique_ptr<TextSource> source;
  Window w;
  bool more = true;
  std::string prefix;  // the top level up to and with the events' "["
  Start(const std::filesystem::path& path, const ReadOptions& options)
      : source(TextSource::open(path)), w(std::max<size_t>(options.part_bytes, 64)) {
    more = w.fill(*source, w.part_bytes());
    const size_t events = find_events(w, *source, more);
    prefix.assign(w.data(), events);
    w.drop_front(events - 1);  // w[0] is the "[" of every part
  }
  // The trace: the rest (the last events and the end of the top level) read by `reader`, which
  // has handled every event before them.
  Trace finish(Reader& reader) {
    const PaddedBuffer rest = PaddedBuffer::copy_of(prefix + std::string(w.data() + 1, w.size() - 1));
    return reader.run(simdjson::padded_string_view(rest.data(), rest.size(), rest.capacity()));
  }
};

// One thread reads, cuts and parses every part.
Trace read_parts(const std::filesystem::path& path, const ReadOptions& options) {
  Start start(path, options);
  Window& w = start.w;
  Reader reader(path.string(), options);
  size_t target = w.part_bytes() + 1;
  while (true) {
    if (start.more && w.size() < target) start.more = w.fill(*start.source, target);
    if (!start.more) break;  // the rest goes with the top level
    // The last cut; when it falls inside a string (found before any event is read), the last
    // one outside strings.
    bool read = false;
    for (int exact = 0; exact < 2 && !read; ++exact) {
      const std::optional<Cut> cut = exact == 0 ? last_cut(w.data(), 1, w.size()) : last_cut_outside_strings(w, 1, w.size());
      if (!cut) break;
      const char saved = w[cut->close];
      w[cut->close] = ']';
      if (reader.read_chunk(w.view(cut->close + 1))) {
        if (options.stats != nullptr) ++options.stats->parts;
        w.drop_front(cut->next - 1);
        w[0] = '[';
        read = true;
      } else {
        w[cut->close] = saved;
      }
    }
    if (read) {
      target = w.part_bytes() + 1;
    } else {
      if (target >= kMostPartBytes) throw NotStreamable{};  // one event this large: read whole
      target *= 2;
    }
  }
  return start.finish(reader);
}

// A part cut inside a string in parallel reading: the parts are read again by one thread, which
// can cut again.
struct CutInsideAString {};

// A part handed to a worker: its text ("[" + events + "]", padded), the reader that parses it (its
// parser holds the events' strings) and the events it collected, kept until they are handled.
struct PartJob {
  PartJob(const std::string& source, const ReadOptions& options) : reader(source, options) {}
  // Room for n bytes, the text so far kept.
  void reserve(size_t n) {
    if (n <= capacity) return;
    const size_t grown = std::max(n, capacity * 2);
    std::unique_ptr<char[]> bigger(new char[grown + PaddedBuffer::kPadding]());  // padding zeroed
    if (size > 0) std::memcpy(bigger.get(), text.get(), size);
    text = std::move(bigger);
    capacity = grown;
  }
  // Reads until the text holds `target` bytes; false once the source has ended.
  bool fill(TextSource& source, size_t target) {
    reserve(target);
    while (size < target) {
      const size_t got = source.read(text.get() + size, target - size);
      if (got == 0) return false;
      size += got;
    }
    return true;
  }
  std::unique_ptr<char[]> text;
  size_t size = 0, capacity = 0;
  Reader reader;
  std::vector<EventFields> events;
  size_t count = 0;
  bool done = false, unclosed = false;  // under the pool's lock
  std::exception_ptr error;
};

// The main thread reads and cuts the parts; `workers` threads parse them (simdjson, every value
// checked: most of the time); the main thread hands their events to the builder in the trace's
// order. Parts in flight: workers + 1.
Trace read_parts_in_parallel(const std::filesystem::path& path, const ReadOptions& options, size_t workers) {
  Start start(path, options);
  Window& w = start.w;
  Reader reader(path.string(), options);
  std::vector<std::unique_ptr<PartJob>> jobs;
  std::deque<PartJob*> idle, in_flight;  // in_flight: in the trace's order
  for (size_t k = 0; k < workers + 1; ++k) {
    jobs.push_back(std::make_unique<PartJob>(path.string(), options));
    idle.push_back(jobs.back().get());
  }
  std::mutex mutex;
  std::condition_variable_any changed;
  std::deque<PartJob*> todo;
  auto handle_oldest = [&] {
    PartJob* job = in_flight.front();
    {
      std::unique_lock lock(mutex);
      changed.wait(lock, [&] { return job->done; });
    }
    in_flight.pop_front();
    if (job->error) std::rethrow_exception(job->error);
    if (job->unclosed) throw CutInsideAString{};
    for (size_t i = 0; i < job->count; ++i)
      reader.handle(job->events[i]);
    if (options.stats != nullptr) ++options.stats->parts;
    idle.push_back(job);
  };
  auto oldest_done = [&] {
    std::lock_guard lock(mutex);
    return !in_flight.empty() && in_flight.front()->done;
  };
  // Last: on any way out the workers stop and are joined before what they use goes.
  std::vector<std::jthread> pool;
  for (size_t k = 0; k < workers; ++k) {
    pool.emplace_back([&](const std::stop_token& stop) {
      while (true) {
        PartJob* job = nullptr;
        {
          std::unique_lock lock(mutex);
          if (!changed.wait(lock, stop, [&] { return !todo.empty(); })) return;
          job = todo.front();
          todo.pop_front();
        }
        try {
          job->unclosed = !job->reader.collect_chunk(
              simdjson::padded_string_view(job->text.get(), job->size, job->capacity + PaddedBuffer::kPadding),
              job->events, job->count);
        } catch (...) {
          job->error = std::current_exception();
        }
        {
          std::lock_guard lock(mutex);
          job->done = true;
        }
        changed.notify_all();
      }
    });
  }
  // Each part is read straight into its job's text: "[", what followed the last cut, new bytes.
  std::string carry(w.data() + 1, w.size() - 1);
  const size_t part = w.part_bytes();
  bool more = start.more;
  std::string last;
  while (true) {
    if (idle.empty()) handle_oldest();
    PartJob* job = idle.front();
    job->size = 0;
    job->reserve(1 + carry.size() + part);
    job->text[0] = '[';
    std::memcpy(job->text.get() + 1, carry.data(), carry.size());
    job->size = 1 + carry.size();
    std::optional<Cut> cut;
    size_t target = std::max(job->size, part + 1);
    while (more) {
      if (job->size < target) more = job->fill(*start.source, target);
      if (!more) break;
      cut = last_cut(job->text.get(), 1, job->size);
      if (cut) break;
      if (target >= kMostPartBytes) throw NotStreamable{};  // one event this large: read whole
      target *= 2;
    }
    if (!more) {  // the text ended: what is left goes with the top level
      last.assign(job->text.get() + 1, job->size - 1);
      break;
    }
    idle.pop_front();
    carry.assign(job->text.get() + cut->next, job->size - cut->next);
    job->text[cut->close] = ']';
    job->size = cut->close + 1;
    job->done = job->unclosed = false;
    job->error = nullptr;
    job->count = 0;
    in_flight.push_back(job);
    {
      std::lock_guard lock(mutex);
      todo.push_back(job);
    }
    changed.notify_all();
    while (oldest_done())
      handle_oldest();
  }
  while (!in_flight.empty())
    handle_oldest();
  const PaddedBuffer text = PaddedBuffer::copy_of(start.prefix + last);
  return reader.run(simdjson::padded_string_view(text.data(), text.size(), text.capacity()));
}

Trace read_streaming(const std::filesystem::path& path, const ReadOptions& options) {
  const size_t threads = options.threads != 0 ? options.threads : std::thread::hardware_concurrency();
  if (threads >= 2) {
    try {
      return read_parts_in_parallel(path, options, std::min<size_t>(threads, 8));
    } catch (const CutInsideAString&) {
      if (options.stats != nullptr) *options.stats = ReadStats{};
    }
  }
  return read_parts(path, options);
}

}  // namespace

TraceFormatError::TraceFormatError(std::string source, uint64_t offset, const std::string& what)
    : std::runtime_error(source + ": byte " + std::to_string(offset) + ": " + what),
      source_(std::move(source)),
      offset_(offset) {}

Trace parse_chrome_json(std::string_view json, const std::string& source,
                        const ReadOptions& options) {
  const PaddedBuffer buffer = PaddedBuffer::copy_of(json);
  return Reader(source, options)
      .run(simdjson::padded_string_view(buffer.data(), buffer.size(), buffer.capacity()));
}

Trace load_chrome_json(const std::filesystem::path& path, const ReadOptions& options) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw std::runtime_error(path.string() + ": no such file");
  if (options.stats != nullptr) *options.stats = ReadStats{};
  if (options.stream) {
    try {
      return read_streaming(path, options);
    } catch (const NotStreamable&) {
    } catch (const TraceFormatError&) {
    } catch (const simdjson::simdjson_error&) {
    }
    // Read again whole: the shape the parts do not handle, or an error to report as a whole
    // read reports it.
  }
  if (options.stats != nullptr) options.stats->whole = true;
  const PaddedBuffer buffer = PaddedBuffer::load(path);
  return Reader(path.string(), options)
      .run(simdjson::padded_string_view(buffer.data(), buffer.size(), buffer.capacity()));
}

}  // namespace pipeprof::trace
