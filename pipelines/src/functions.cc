#include "pipeprof/pipelines/functions.h"

#include <fmt/format.h>

#include <atomic>
#include <map>
#include <random>
#include <span>

#include "pipeprof/pipelines/errors.h"
#include "pipeprof/pipelines/sleep.h"
#include "pipeprof/pipelines/time_distribution.h"
#include "parse_example.h"
#include "image_functions.h"
#include "mp/cpu_turns.h"
#include "pages.h"
#include "pipeprof/trace/clock.h"
#include "spec_fields.h"

namespace pipeprof::pipelines {
namespace {

using spec_detail::Fields;

int64_t ms_to_ns(double ms) {
  return static_cast<int64_t>(ms * static_cast<double>(trace::kNsPerMs));
}

// Timings for the ideal-time simulator (SimTiming), stated with each callable below.
SimTiming cheap() {  // no latency; the simulator calls it for element values
  return {.known = true, .unknown = {}, .latency_ms = 0, .evaluate = true};
}
SimTiming latency(double ms) {  // a known latency; values pass through unchanged
  return {.known = true, .unknown = {}, .latency_ms = ms, .evaluate = false};
}
// Fills new float32 tensors of `shapes` (random_element): CPU work timed at the fill rate measured
// in the same run, after a known latency.
SimTiming filled(const std::vector<Shape>& shapes, double latency_ms = 0) {
  double bytes = 0;
  for (const Shape& shape : shapes)
    bytes += static_cast<double>(num_elements(shape)) * sizeof(float);
  return {.known = true, .unknown = {}, .latency_ms = latency_ms, .evaluate = false,
          .fill_bytes = bytes};
}

template <typename C>
C registered(std::string name, const nlohmann::json& args, decltype(C::fn) fn, SimTiming sim) {
  C c;
  c.sim = std::move(sim);
  c.name = std::move(name);
  c.args = args.is_null() ? nlohmann::json::object() : args;
  c.serializable = true;
  c.fn = std::move(fn);
  return c;
}

// Adds one to every value of a numeric tensor, in place when the buffer is not shared.
void increment_tensor(Tensor& t) {
  switch (t.dtype()) {
    case DType::kInt64:
      for (auto& v : t.mutable_values<int64_t>())
        ++v;
      break;
    case DType::kInt32:
      for (auto& v : t.mutable_values<int32_t>())
        ++v;
      break;
    case DType::kUInt8:
      for (auto& v : t.mutable_values<uint8_t>())
        ++v;
      break;
    case DType::kFloat32:
      for (auto& v : t.mutable_values<float>())
        v += 1.0F;
      break;
    case DType::kFloat64:
      for (auto& v : t.mutable_values<double>())
        v += 1.0;
      break;
    case DType::kBool:
      throw std::invalid_argument("increment: cannot increment a bool tensor");
  }
}

// The seed contribution of an element: the value of a one-value component 0, else 0.
uint64_t element_seed(const Element& e) {
  if (!e.empty() && e[0].num_elements() == 1 && e[0].dtype() != DType::kFloat32 &&
      e[0].dtype() != DType::kFloat64) {
    return static_cast<uint64_t>(e[0].as_int64());
  }
  return 0;
}

// New float32 tensors of `shapes`, not filled yet. With `touched`, the pages of the large ones
// are faulted in now: the first touch of memory the process has never used (the kernel zeroes
// each page) happens here instead of in the fill.
Element new_tensors(const std::vector<Shape>& shapes, bool touched) {
  Element out;
  out.reserve(shapes.size());
  for (const Shape& shape : shapes) {
    Tensor t = Tensor::uninitialized(DType::kFloat32, shape);  // filled whole later
    if (touched) {
      const std::span<float> v = t.mutable_values<float>();
      fault_in_for_write(std::as_writable_bytes(v));
    }
    out.push_back(std::move(t));
  }
  return out;
}

void fill_element(Element& e, uint64_t seed) {
  const mp::CpuTurn turn;
  for (size_t i = 0; i < e.size(); ++i)
    fill_random(e[i].mutable_values<float>(), seed * 0x9E3779B97F4A7C15ULL + i);
}

Element random_element(const std::vector<Shape>& shapes, uint64_t seed) {
  Element out = new_tensors(shapes, false);
  fill_element(out, seed);
  return out;
}

using FunctionMaker = Function (*)(const Fields&, const nlohmann::json&);
using PredicateMaker = Predicate (*)(const Fields&, const nlohmann::json&);
using GeneratorMaker = GeneratorFn (*)(const Fields&, const nlohmann::json&);

const std::map<std::string, FunctionMaker>& functions() {
  static const std::map<std::string, FunctionMaker> kFunctions{
      {"identity",
       [](const Fields& f, const nlohmann::json& args) {
         f.only({});
         return registered<Function>("identity", args, [](Element e) { return e; }, cheap());
       }},
      {"increment",
       [](const Fields& f, const nlohmann::json& args) {
         f.only({});
         return registered<Function>("increment", args, [](Element e) {
           for (Tensor& t : e)
             increment_tensor(t);
           return e;
         }, cheap());
       }},
      {"sleep_ms",
       [](const Fields& f, const nlohmann::json& args) {
         f.only({"ms"});
         const double ms = f.number("ms", std::nullopt, 0);
         return registered<Function>("sleep_ms", args, [ns = ms_to_ns(ms)](Element e) {
           precise_sleep_for(ns);
           return e;
         }, latency(ms));
       }},
      {"busy_ms",
       [](const Fields& f, const nlohmann::json& args) {
         f.only({"ms"});
         const double ms = f.number("ms", std::nullopt, 0);
         return registered<Function>("busy_ms", args, [ns = ms_to_ns(ms)](Element e) {
           const mp::CpuTurn turn;
           busy_for(ns);
           return e;
         }, latency(ms));
       }},
      // A time drawn from a distribution for every element (DLIO's time values, in seconds:
      // time_distribution.h): call k draws from a generator seeded with `seed` and k (a
      // microsecond's seeding beside a sleep of milliseconds; no state shared between threads).
      {"sleep_time",
       [](const Fields& f, const nlohmann::json& args) {
         f.only({"time", "seed"});
         TimeDistribution time;
         try {
           time = TimeDistribution::parse(f.raw("time"), f.path("time"));
         } catch (const std::invalid_argument& e) {
           throw SpecError(e.what());
         }
         const auto seed = static_cast<uint64_t>(f.integer("seed", 0, 0));
         auto calls = std::make_shared<std::atomic<uint64_t>>(0);
         return registered<Function>("sleep_time", args, [time, seed, calls](Element e) {
           std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ULL + calls->fetch_add(1));
           precise_sleep_for(static_cast<int64_t>(time.sample(rng) * 1e9));
           return e;
         }, latency(time.mean() * 1e3));
       }},
      // The element's size: one int64 scalar, the bytes of all its tensors (a stand-in for a
      // sample whose bytes have been read and are no longer needed, as DLIO's readers return).
      {"nbytes",
       [](const Fields& f, const nlohmann::json& args) {
         f.only({});
         return registered<Function>("nbytes", args, [](Element e) {
           int64_t bytes = 0;
           for (const Tensor& t : e)
             bytes += static_cast<int64_t>(t.nbytes());
           return scalar_element(bytes);
         }, latency(0));
       }},
      {"parse_example", make_parse_example},  // parse_example.h: tf.Example -> tensors
      {"fill_random",
       [](const Fields& f, const nlohmann::json& args) {
         f.only({"shape", "shapes", "seed"});
         auto shapes = f.shapes();
         const auto seed = static_cast<uint64_t>(f.integer("seed", 0, 0));
         return registered<Function>("fill_random", args, [shapes, seed](Element e) {
           return random_element(shapes, seed ^ element_seed(e));
         }, filled(shapes));
       }},
      // The image functions (image_functions.h).
      {"decode_jpeg", image::decode_jpeg},
      {"resize", image::resize},
      {"random_crop", image::random_crop},
      {"flip", image::flip},
      {"normalize", image::normalize},
      // chain {fns: [{fn, args}, ...]}: the functions one after the other, in one map (tf.data's
      // fused parse-decode-augment function).
      {"chain",
       [](const Fields& f, const nlohmann::json& args) {
         f.only({"fns"});
         const nlohmann::json& list = f.raw("fns");
         if (!list.is_array() || list.empty())
           f.fail("fns", "a non-empty list of {\"fn\": ..., \"args\": {...}}", list);
         std::vector<Function> fns;
         SimTiming timing{.known = true, .unknown = {}, .latency_ms = 0, .evaluate = true};
         for (size_t i = 0; i < list.size(); ++i) {
           const nlohmann::json& item = list[i];
           if (!item.is_object() || !item.contains("fn") || !item["fn"].is_string())
             f.fail("fns", "a non-empty list of {\"fn\": ..., \"args\": {...}}", list);
           fns.push_back(make_function(item["fn"].get<std::string>(),
                                       item.value("args", nlohmann::json::object()),
                                       fmt::format("{}.fns[{}].args", f.where(), i)));
           const SimTiming& t = fns.back().sim;
           timing.known = timing.known && t.known && t.fill_bytes == 0 && t.count < 0;
           timing.latency_ms += t.latency_ms;
           timing.evaluate = timing.evaluate && t.evaluate;
         }
         return registered<Function>("chain", args, [fns](Element e) {
           for (const Function& fn : fns)
             e = fn.fn(std::move(e));
           return e;
         }, timing.known ? timing
                         : SimTiming{.known = false,
                                     .unknown = "a chain with a function of unknown duration"});
       }},
  };
  return kFunctions;
}

template <typename Compare>
Predicate compare_predicate(const char* name, const Fields& f, const nlohmann::json& args,
                            Compare cmp) {
  f.only({"value"});
  const double value = f.number("value");
  return registered<Predicate>(name, args, [value, cmp](const Element& e) {
    if (e.empty()) throw std::invalid_argument("the element has no components");
    return cmp(e[0].as_double(), value);
  }, cheap());
}

const std::map<std::string, PredicateMaker>& predicates() {
  static const std::map<std::string, PredicateMaker> kPredicates{
      {"less_than",
       [](const Fields& f, const nlohmann::json& a) {
         return compare_predicate("less_than", f, a, [](double x, double v) { return x < v; });
       }},
      {"greater_than",
       [](const Fields& f, const nlohmann::json& a) {
         return compare_predicate("greater_than", f, a, [](double x, double v) { return x > v; });
       }},
      {"equal",
       [](const Fields& f, const nlohmann::json& a) {
         return compare_predicate("equal", f, a, [](double x, double v) { return x == v; });
       }},
      {"not_equal",
       [](const Fields& f, const nlohmann::json& a) {
         return compare_predicate("not_equal", f, a, [](double x, double v) { return x != v; });
       }},
      {"modulo_equals",
       [](const Fields& f, const nlohmann::json& args) {
         f.only({"modulus", "remainder"});
         const int64_t modulus = f.integer("modulus", std::nullopt, 1);
         const int64_t remainder = f.integer("remainder", 0, 0, modulus - 1);
         return registered<Predicate>(
             "modulo_equals", args, [modulus, remainder](const Element& e) {
               if (e.empty()) throw std::invalid_argument("the element has no components");
               const int64_t r = e[0].as_int64() % modulus;
               return (r < 0 ? r + modulus : r) == remainder;
             }, cheap());
       }},
  };
  return kPredicates;
}

const std::map<std::string, GeneratorMaker>& generators() {
  static const std::map<std::string, GeneratorMaker> kGenerators{
      {"counter",
       [](const Fields& f, const nlohmann::json& args) {
         f.only({"count"});
         const int64_t count = f.integer("count", std::nullopt, 0);
         return registered<GeneratorFn>("counter", args, [count] {
           return std::function<std::optional<Element>()>(
               [count, i = int64_t{0}]() mutable -> std::optional<Element> {
                 if (i >= count) return std::nullopt;
                 return scalar_element(i++);
               });
         }, cheap());
       }},
      {"random_tensors",
       [](const Fields& f, const nlohmann::json& args) {
         f.only({"count", "shape", "shapes", "delay_ms", "seed"});
         const int64_t count = f.integer("count", std::nullopt, 0);
         auto shapes = f.shapes();
         const int64_t delay_ns = ms_to_ns(f.number("delay_ms", 0.0, 0));
         const auto seed = static_cast<uint64_t>(f.integer("seed", 0, 0));
         // Each element: the delay (its fetch), then the fill (values not tracked). As a reader
         // has the buffer it fetches into before the fetch, the element's tensors are made at
         // the start of the delay, their pages faulted in while it runs (on memory the process
         // has not used before, that first touch costs as much as the fill on a VM).
         SimTiming timing = filled(shapes, f.number("delay_ms", 0.0, 0));
         timing.count = count;
         return registered<GeneratorFn>("random_tensors", args, [=] {
           return std::function<std::optional<Element>()>(
               [=, i = int64_t{0}]() mutable -> std::optional<Element> {
                 if (i >= count) return std::nullopt;
                 const int64_t fetched = trace::now_ns() + delay_ns;
                 Element e = new_tensors(shapes, delay_ns > 0);
                 if (!precise_sleep_until(fetched)) return std::nullopt;  // cancelled
                 fill_element(e, seed + static_cast<uint64_t>(i++));
                 return e;
               });
         }, timing);
       }},
  };
  return kGenerators;
}

template <typename Map>
auto make(const Map& registry, const char* kind, const std::string& name,
          const nlohmann::json& args, const std::string& where) {
  auto it = registry.find(name);
  if (it == registry.end()) {
    std::vector<std::string> known;
    for (const auto& [k, v] : registry)
      known.push_back(k);
    throw SpecError(fmt::format("{}: unknown {} \"{}\" (known: {})", where, kind, name,
                                fmt::join(known, ", ")));
  }
  const nlohmann::json& a = args.is_null() ? nlohmann::json::object() : args;
  return it->second(Fields(a, where + ".args"), a);
}

template <typename Map>
std::vector<std::string> names(const Map& registry) {
  std::vector<std::string> out;
  for (const auto& [k, v] : registry)
    out.push_back(k);
  return out;
}

}  // namespace

Function make_function(const std::string& name, const nlohmann::json& args,
                       const std::string& where) {
  return make(functions(), "function", name, args, where);
}
Predicate make_predicate(const std::string& name, const nlohmann::json& args,
                         const std::string& where) {
  return make(predicates(), "predicate", name, args, where);
}
GeneratorFn make_generator(const std::string& name, const nlohmann::json& args,
                           const std::string& where) {
  return make(generators(), "generator", name, args, where);
}

std::vector<std::string> function_names() {
  return names(functions());
}
std::vector<std::string> predicate_names() {
  return names(predicates());
}
std::vector<std::string> generator_names() {
  return names(generators());
}

void fill_random(std::span<float> out, uint64_t seed) {
  // fmix32 of (counter ^ key): a counter-based generator, so every lane is independent and the
  // loop vectorizes. 24 random bits give a float in [0, 1).
  const auto key = static_cast<uint32_t>(seed ^ (seed >> 32)) * 0x9E3779B9U + 0x7F4A7C15U;
  float* data = out.data();
  const size_t n = out.size();
  for (size_t i = 0; i < n; ++i) {
    uint32_t x = static_cast<uint32_t>(i) ^ key;
    x ^= x >> 16;
    x *= 0x85EBCA6BU;
    x ^= x >> 13;
    x *= 0xC2B2AE35U;
    x ^= x >> 16;
    data[i] = static_cast<float>(x >> 8) * (1.0F / 16777216.0F);
  }
}

}  // namespace pipeprof::pipelines
