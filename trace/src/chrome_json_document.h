// The Chrome Trace Event JSON reader (chrome_json_reader.cc, chrome_json_parts.cc) on simdjson's On-Demand API: one forward pass over the document,
// every value validated (skipped values included, so the writer never re-emits broken JSON), the
// events handed to TraceBuilder. Errors carry the byte offset simdjson stopped at, or the start of
// the event whose content is wrong.
//
// Choices: timestamps are read from the number's text (exact to the nanosecond, even for
// epoch-based microseconds that a double cannot hold); "X" needs ts and dur >= 0; an "E" without a
// "B" is an error, a "B" without an "E" is closed at the end of the trace (metadata
// "unclosed_spans" counts them); unknown phases are ignored; a counter's "value" series is named
// after the event, any other key k as "<name>.<k>".
#pragma once

#include <simdjson.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstring>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "chrome_json_event.h"
#include "json_text.h"
#include "pipeprof/trace/chrome_json.h"
#include "trace_builder.h"

namespace pipeprof::trace::detail {

namespace od = simdjson::ondemand;
namespace jt = json_text;

class Reader {
 public:
  static constexpr int kMaxDepth = 256;  // arrays and objects open at once inside an event's values

  Reader(std::string source, const ReadOptions& options)
      : source_(std::move(source)), builder_(source_), keep_args_(options.keep_args) {}
  // args_ points at own_args_: a copy or move would point at the original's.
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;

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
    // Parts differ a little in size: simdjson reallocates its index for every part larger than
    // the largest so far, touching fresh pages each time (a fifth of a 500 MB trace's page
    // faults); with a quarter to spare it does so about once. Where that much cannot be had,
    // iterate() allocates what the part needs, or says why not.
    if (parser_.capacity() < json.size()) {
      const simdjson::error_code spare = parser_.allocate(json.size() + json.size() / 4);
      (void)spare;
    }
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
  // which is cheaper than converting them; arrays and objects from their text too, which
  // simdjson's index finds the end of (json_text::check_value: one pass, no recursion).
  void validate(od::value v) {
    const od::json_type type = v.type();
    std::string_view text;
    if (type == od::json_type::array) {
      od::array a = v.get_array();
      text = trim_right(a.raw_json());
    } else if (type == od::json_type::object) {
      od::object o = v.get_object();
      text = trim_right(o.raw_json());
    } else {
      (void)check_scalar(v);
      return;
    }
    if (const auto error = jt::check_value(text, kMaxDepth, scratch_)) {
      if (error->too_deep)
        fail(offset_of(text.data() + error->offset),
             "values nested deeper than " + std::to_string(kMaxDepth) + " levels");
      const std::string_view rest = text.substr(error->offset);
      fail(offset_of(text.data() + error->offset),
           "malformed JSON value: " + std::string(rest.substr(0, std::min<size_t>(rest.size(), 40))));
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

  // A string's text from its first byte (after the opening quote), without a copy: a view into
  // the document when it holds no escape, else unescaped into storage that lives as long as the
  // event (for a part's events, as long as the part). simdjson's first stage has checked that
  // the string ends and holds no raw control character; the escapes are checked here. `key`: the
  // key whose value it is (named in errors), or nullptr for a key itself.
  std::string_view string_at(const char* p, const char* key) {
    const auto what = [key] {
      if (key == nullptr) return std::string("a key");
      std::string quoted(1, '"');
      quoted.append(key).push_back('"');
      return quoted;
    };
    const auto found = jt::find_string_end(p, json_.data() + json_.size());
    if (!found) fail(offset_of(p), "unterminated string: " + what());
    const std::string_view inner(p, static_cast<size_t>(found->close - p));
    if (!found->escaped) return inner;
    std::string& unescaped = key_storage_.emplace_back();
    if (!jt::unescape(inner, unescaped)) fail(offset_of(p), "invalid escape in " + what());
    return unescaped;
  }

  // A field's key.
  std::string_view key_text(simdjson::simdjson_result<od::field>& field) {
    return string_at(field.key().raw(), nullptr);
  }

  // A string value's text (string_at) of `key`.
  std::string_view string_text(od::value& v, const char* key) {
    return string_at(v.get_raw_json_string().value().raw(), key);
  }

  void read_events(od::array events) {
    for (auto element : events) {
      od::value v = element.value();
      in_event_ = true;
      event_offset_ = location();
      if (v.type() != od::json_type::object) fail_event("an event must be a JSON object");
      if (collected_ != nullptr) {  // read straight into the part's list
        if (collected_count_ == collected_->size()) collected_->emplace_back();
        ev_ = &(*collected_)[collected_count_];
      } else {  // collected events' keys and args live with the part
        key_storage_.clear();
        args_->clear();
      }
      ev_->clear();
      ev_->args_begin = ev_->args_end = static_cast<uint32_t>(args_->size());
      for (auto field : v.get_object()) {
        const std::string_view key = key_text(field);
        read_field(key, field.value());
      }
      if (collected_ != nullptr) {
        ++collected_count_;
        ev_ = &e_;
      } else {
        handle_event();
      }
      in_event_ = false;
      ++event_index_;
    }
  }

 public:
  // Reads a part's events ("[" + events + "]") into `events` (its first `count` elements) and
  // their numeric args into `args`, without handling them: their views point into the part's text
  // and this reader's parser, so both must stay as they are until handle() has taken every one.
  // False: the part was cut inside a string.
  bool collect_chunk(simdjson::padded_string_view json, std::vector<EventFields>& events,
                     std::vector<NumericArg>& args, size_t& count) {
    collected_ = &events;
    collected_count_ = 0;
    key_storage_.clear();
    args.clear();
    args_ = &args;
    struct Reset {
      Reader* r;
      ~Reset() {
        r->collected_ = nullptr;
        r->args_ = &r->own_args_;
        r->ev_ = &r->e_;
      }
    } reset{this};
    const bool read = read_chunk(json);
    count = collected_count_;
    return read;
  }

  // Handles the first `count` events another reader collected (their args in `args`), as if
  // read here (in the trace's order).
  void handle(std::vector<EventFields>& events, size_t count, std::vector<NumericArg>& args) {
    args_ = &args;
    struct Reset {
      Reader* r;
      ~Reset() {
        r->args_ = &r->own_args_;
        r->ev_ = &r->e_;
      }
    } reset{this};
    for (size_t i = 0; i < count; ++i) {
      ev_ = &events[i];
      handle_event();
      ++event_index_;
    }
  }

 private:
  std::string_view string_field(od::value v, const char* key) {
    if (v.type() != od::json_type::string)
      fail_event(std::string("\"") + key + "\" must be a string");
    return string_text(v, key);
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
    // The args' text is kept only when asked for (args_index).
    const char* start = keep_args_ ? json_.data() + location() : nullptr;
    // Counters and metadata read their numeric args; events of other phases only "stream" and
    // "device" (the phase comes first in the files of every tracer we know).
    const bool every_number = !ev_->has(EventFields::kPh) || ev_->ph == "C" || ev_->ph == "M";
    for (auto field : v.get_object()) {
      const std::string_view key = key_text(field);
      od::value value = field.value();
      const od::json_type type = value.type();
      if (type == od::json_type::number) {
        const std::string_view text = check_scalar(value);
        if (every_number) {
          args_->emplace_back(key, text);
          ev_->args_end = static_cast<uint32_t>(args_->size());
        }
        if (key == "stream" && ev_->stream_arg.empty()) {  // the first, as numeric_arg finds
          ev_->stream_arg = text;
        } else if (key == "device" && ev_->device_arg.empty()) {
          ev_->device_arg = text;
        }
      } else if (type == od::json_type::string && key == "name") {
        ev_->arg_name = string_text(value, "args.name");
        ev_->given |= EventFields::kArgName;
      } else {
        validate(value);
      }
    }
    ev_->given |= EventFields::kArgs;
    if (start != nullptr) {
      const char* end = json_.data() + location();
      ev_->args_raw = trim_right(std::string_view(start, static_cast<size_t>(end - start)));
    }
  }

  void read_field(std::string_view key, od::value v) {
    if (key.size() == 2) {
      switch (short_key(key)) {
        case short_key("ph"):
          ev_->given |= EventFields::kPh;
          return void(ev_->ph = string_field(v, "ph"));
        case short_key("ts"):
          ev_->given |= EventFields::kTs;
          return void(ev_->ts = time_field(v, "ts"));
        case short_key("id"):
          ev_->given |= EventFields::kId;
          return void(ev_->id = flow_id_field(v));
        case short_key("bp"):
          ev_->given |= EventFields::kBp;
          return void(ev_->bp = string_field(v, "bp"));
        default:
          break;
      }
    } else if (key.size() == 3) {
      switch (short_key(key)) {
        case short_key("pid"):
          return void(ev_->pid = id_field(v, "pid", ev_->pid_text));
        case short_key("tid"):
          return void(ev_->tid = id_field(v, "tid", ev_->tid_text));
        case short_key("cat"):
          ev_->given |= EventFields::kCat;
          return void(ev_->cat = string_field(v, "cat"));
        case short_key("dur"):
          ev_->given |= EventFields::kDur;
          return void(ev_->dur = time_field(v, "dur"));
        default:
          break;
      }
    } else if (key.size() == 4) {
      switch (short_key(key)) {
        case short_key("name"):
          ev_->given |= EventFields::kName;
          return void(ev_->name = string_field(v, "name"));
        case short_key("args"):
          return read_args(v);
        default:
          break;
      }
    }
    validate(v);
  }

  static std::optional<double> arg_value(std::string_view text) {
    return text.empty() ? std::nullopt : EventFields::to_double(text);
  }
  std::optional<double> numeric_arg(std::string_view key) const {
    for (uint32_t k = ev_->args_begin; k < ev_->args_end; ++k)
      if ((*args_)[k].first == key) return EventFields::to_double((*args_)[k].second);
    return std::nullopt;
  }

  // What a category is (kGpuCategory, ...), remembered by its id: categories are few, events many.
  static constexpr uint8_t kKnownCategory = 1, kGpuCategory = 2, kKinetoCategory = 4, kSyncCategory = 8;
  uint8_t category_kind(StrId cat) {
    if (cat == kNoStr) return 0;
    if (cat >= category_kinds_.size()) category_kinds_.resize(size_t{cat} + 1, 0);
    uint8_t& kind = category_kinds_[cat];
    if (kind == 0) {
      const std::string& text = builder_.strings().str(cat);
      kind = kKnownCategory;
      if (is_gpu_category(text)) kind |= kGpuCategory;
      if (is_kineto_category(text)) kind |= kKinetoCategory;
      if (text == "cuda_sync") kind |= kSyncCategory;
    }
    return kind;
  }

  // Names and categories repeat from event to event: the strings interned last are found again by
  // a cheap key (the length, the first and the last 8 bytes) and one compare, without hashing the
  // whole text.
  StrId name_id() { return ev_->has(EventFields::kName) ? intern(ev_->name) : kNoStr; }
  StrId intern(std::string_view v) {
    uint64_t head = 0, tail = 0;
    std::memcpy(&head, v.data(), std::min<size_t>(8, v.size()));
    if (v.size() > 8) std::memcpy(&tail, v.data() + v.size() - 8, 8);
    const uint64_t key = head * 0x9E3779B97F4A7C15ULL ^ (tail + v.size()) * 0xC2B2AE3D27D4EB4FULL;
    InternSlot& slot = intern_cache_[(key >> 32) % intern_cache_.size()];
    if (slot.id != kNoStr && slot.size == v.size() && builder_.strings().str(slot.id) == v) return slot.id;
    const StrId id = builder_.strings().intern(v);
    slot = InternSlot{id, v.size()};
    return id;
  }
  uint32_t args_index() {
    if (!keep_args_ || !ev_->has(EventFields::kArgs) || ev_->args_raw.size() <= 2) return kNoArgs;  // absent or {}
    return builder_.add_args(ev_->args_raw);
  }
  int64_t need_ts() {
    if (!ev_->has(EventFields::kTs)) fail_event("\"ts\" is missing");
    return ev_->ts;
  }

  void handle_event() {
    if (!ev_->has(EventFields::kPh)) fail_event("\"ph\" (the event's phase) is missing");
    if (!ev_->pid_text.empty()) ev_->pid = builder_.pid_from_string(ev_->pid_text);
    if (!ev_->tid_text.empty()) ev_->tid = builder_.tid_from_string(ev_->pid, ev_->tid_text);
    cat_ = ev_->has(EventFields::kCat) ? intern(ev_->cat) : kNoStr;
    cat_kind_ = category_kind(cat_);
    const bool gpu = (cat_kind_ & kGpuCategory) != 0;
    if ((cat_kind_ & kKinetoCategory) != 0) kineto_ = true;
    const std::string_view ph = ev_->ph;
    if (ph.size() != 1) return;  // unknown phase: ignored
    switch (ph[0]) {
      case 'X':
        return complete_event(gpu);
      case 'B': {
        const uint32_t lane = builder_.lane(ev_->pid, ev_->tid);
        if (!gpu) builder_.note_host_span(lane);
        return builder_.begin(lane, need_ts(), name_id(), cat_, args_index());
      }
      case 'E': {
        const uint32_t lane = builder_.lane(ev_->pid, ev_->tid);
        return builder_.end(lane, need_ts(), args_index(), event_offset_);
      }
      case 'i':
      case 'I':
      case 'n': {
        Instant i;
        i.ts_ns = need_ts();
        i.name = name_id();
        i.category = cat_;
        i.args = args_index();
        return builder_.add_instant(builder_.lane(ev_->pid, ev_->tid), i);
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
    if (!ev_->has(EventFields::kDur)) fail_event("complete event (ph \"X\") has no \"dur\"");
    if (ev_->dur < 0) fail_event("\"dur\" is negative");
    if (s.start_ns > 0 && ev_->dur > std::numeric_limits<int64_t>::max() - s.start_ns)
      fail_event("\"ts\" + \"dur\" is out of range");
    s.dur_ns = ev_->dur;
    s.name = name_id();
    s.category = cat_;
    s.args = args_index();
    const uint32_t lane = builder_.lane(ev_->pid, ev_->tid);
    if (gpu) {
      const auto stream = arg_value(ev_->stream_arg);
      if (stream && *stream >= 0 && *stream == std::floor(*stream) && *stream < 9e18) {
        const auto device = arg_value(ev_->device_arg);
        const bool device_ok = device && *device >= 0 && *device < 1e9;
        builder_.mark_gpu(lane, device_ok ? static_cast<int32_t>(*device) : 0,
                          static_cast<int64_t>(*stream),
                          (cat_kind_ & kSyncCategory) != 0 ? TraceBuilder::GpuMark::kSync
                                                 : TraceBuilder::GpuMark::kDeviceWork);
      }
    } else {
      builder_.note_host_span(lane);  // only a CPU thread records spans of other categories
    }
    builder_.add_span(lane, s);
  }

  void counter_event() {
    const int64_t ts = need_ts();
    const std::string_view name = ev_->name_or_empty();
    builder_.note_process(ev_->pid);
    for (uint32_t k = ev_->args_begin; k < ev_->args_end; ++k) {
      const auto& [key, text] = (*args_)[k];
      const auto parsed = EventFields::to_double(text);
      if (!parsed) fail_event("counter \"" + std::string(key) + "\" is out of range");
      const double value = *parsed;
      if (key == "value") {
        builder_.counter(ev_->pid, name, ts, value);
      } else {
        series_name_.assign(name);
        if (!series_name_.empty()) series_name_.push_back('.');
        series_name_.append(key);
        builder_.counter(ev_->pid, series_name_, ts, value);
      }
    }
  }

  void metadata_event() {
    const std::string_view kind = ev_->name_or_empty();
    if (kind == "process_name" || kind == "thread_name") {
      if (!ev_->has(EventFields::kArgName)) return;
      if (kind == "process_name") return builder_.process_name(ev_->pid, ev_->arg_name);
      builder_.thread_name(ev_->pid, ev_->tid, ev_->arg_name);
      const auto device = arg_value(ev_->device_arg);
      const auto stream = arg_value(ev_->stream_arg);
      if (device && stream && *device >= 0 && *device < 1e9 && *stream >= -1 && *stream < 9e18)
        builder_.mark_gpu(builder_.lane(ev_->pid, ev_->tid), static_cast<int32_t>(*device),
                          static_cast<int64_t>(*stream), TraceBuilder::GpuMark::kMetadata);
      return;
    }
    if (kind == "process_sort_index" || kind == "thread_sort_index") {
      const auto index = numeric_arg("sort_index");
      if (!index || !(std::fabs(*index) < 9e18)) return;
      if (kind == "process_sort_index")
        return builder_.process_sort_index(ev_->pid, static_cast<int64_t>(*index));
      builder_.thread_sort_index(ev_->pid, ev_->tid, static_cast<int64_t>(*index));
    }
  }

  void flow_event(char ph) {
    const int64_t ts = need_ts();
    if (!ev_->has(EventFields::kId)) fail_event("flow event (ph \"" + std::string(1, ph) + "\") has no \"id\"");
    const FlowPhase phase = ph == 's'   ? FlowPhase::kStart
                            : ph == 't' ? FlowPhase::kStep
                                        : FlowPhase::kFinish;
    builder_.flow(phase, ev_->id, cat_, name_id(), builder_.lane(ev_->pid, ev_->tid),
                  ts);
  }

  std::string source_;
  simdjson::padded_string_view json_;
  od::parser parser_;
  od::document* doc_ = nullptr;
  TraceBuilder builder_;
  bool keep_args_ = true;
  EventFields e_;
  EventFields* ev_ = &e_;  // the event being read or handled: e_, or one of a part's list
  std::deque<std::string> key_storage_;
  std::vector<EventFields>* collected_ = nullptr;  // collect_chunk's list
  StrId cat_ = kNoStr;                   // the handled event's category
  uint8_t cat_kind_ = 0;                 // and what it is (category_kind)
  std::vector<uint8_t> category_kinds_;  // by category id
  struct InternSlot {
    StrId id = kNoStr;
    size_t size = 0;
  };
  std::array<InternSlot, 512> intern_cache_{};  // intern()'s
  std::vector<NumericArg> own_args_;                 // the numeric args of the event read here
  std::vector<NumericArg>* args_ = &own_args_;       // or of a part's events
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


}  // namespace pipeprof::trace::detail
