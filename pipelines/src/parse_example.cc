#include "parse_example.h"

#include <fmt/format.h>

#include <cstring>
#include <stdexcept>

#include "formats/example.h"
#include "pipeprof/pipelines/errors.h"
#include "formats/tfrecord.h"

namespace pipeprof::pipelines {
namespace {

using formats::FeatureKind;

struct Wanted {
  std::vector<std::string> keys;
  std::vector<FeatureKind> kinds;
};

Element parse(const Element& in, const Wanted& wanted) {
  if (in.empty() || in[0].dtype() != DType::kUInt8 || in[0].rank() != 1) {
    throw std::invalid_argument(
        "parse_example: component 0 must be a serialized tf.Example (a rank-1 uint8 tensor)");
  }
  const auto bytes = std::span(in[0].data(), in[0].nbytes());
  // A record that does not hold what the spec asks for is bad input data: the error names the
  // file and record it came from, where the source said.
  const auto bad_record = [&](const std::string& what) {
    const std::string origin = in[0].origin();
    return InputDataError("parse_example", origin.empty() ? what : origin + ": " + what);
  };
  std::vector<formats::Feature> features;
  try {
    features = formats::decode_example(bytes, wanted.keys);
  } catch (const formats::FormatError& e) {
    throw bad_record(e.what());
  }
  Element out;
  out.reserve(features.size());
  for (size_t i = 0; i < features.size(); ++i) {
    const formats::Feature& f = features[i];
    const std::string& key = wanted.keys[i];
    if (f.kind == FeatureKind::kNone) {
      throw bad_record(fmt::format("feature \"{}\" is missing", key));
    }
    if (f.kind != wanted.kinds[i]) {
      throw bad_record(fmt::format("feature \"{}\" is a {} list, expected {}", key,
                                   feature_kind_name(f.kind), feature_kind_name(wanted.kinds[i])));
    }
    switch (f.kind) {
      case FeatureKind::kBytes: {
        if (f.bytes.size() != 1) {
          throw bad_record(
              fmt::format("bytes feature \"{}\" has {} values, expected 1", key, f.bytes.size()));
        }
        Tensor t(DType::kUInt8, {static_cast<int64_t>(f.bytes[0].size())});
        if (!f.bytes[0].empty()) std::memcpy(t.mutable_data(), f.bytes[0].data(), f.bytes[0].size());
        out.push_back(std::move(t));
        break;
      }
      case FeatureKind::kInt64:
        out.push_back(Tensor::from_vector<int64_t>(f.int64s));
        break;
      case FeatureKind::kFloat:
        out.push_back(Tensor::from_vector<float>(f.floats));
        break;
      case FeatureKind::kNone:
        break;
    }
    out.back().copy_origin_from(in[0]);
  }
  return out;
}

}  // namespace

Function make_parse_example(const spec_detail::Fields& f, const nlohmann::json& args) {
  f.only({"features"});
  const nlohmann::json& list = f.raw("features");
  const char* expected = "a non-empty list of {\"key\": <name>, \"type\": bytes|int64|float}";
  if (!list.is_array() || list.empty()) f.fail("features", expected, list);
  Wanted wanted;
  for (size_t i = 0; i < list.size(); ++i) {
    const spec_detail::Fields item(list[i], fmt::format("{}[{}]", f.path("features"), i));
    item.only({"key", "type"});
    const std::string key = item.string("key");
    const std::string type = item.string("type");
    FeatureKind kind = FeatureKind::kNone;
    if (type == "bytes") kind = FeatureKind::kBytes;
    if (type == "int64") kind = FeatureKind::kInt64;
    if (type == "float") kind = FeatureKind::kFloat;
    if (kind == FeatureKind::kNone) item.fail("type", "bytes, int64 or float", item.raw("type"));
    wanted.keys.push_back(key);
    wanted.kinds.push_back(kind);
  }
  Function fn([wanted](Element e) { return parse(e, wanted); }, "parse_example");
  fn.args = args;
  fn.serializable = true;
  fn.sim = {.known = false, .unknown = "decodes records of unknown size", .latency_ms = 0,
            .evaluate = false};
  return fn;
}

}  // namespace pipeprof::pipelines
