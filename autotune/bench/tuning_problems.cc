#include "tuning_problems.h"

#include <algorithm>
#include <fstream>
#include <stdexcept>

#include "pipeprof/autotune/simulator.h"
#include "pipeprof/pipelines/spec.h"

namespace pipeprof::autotune::bench {
namespace {

std::vector<int64_t> values(const std::string& knob, int64_t max) {
  std::vector<int64_t> v;
  for (int64_t i = 1; i <= max; i = knob == "buffer_size" ? i * 2 : i + 1)
    v.push_back(i);
  return v;
}

int64_t value_at(const KnobAssignment& a, const std::string& path) {
  auto it = a.find(path);
  if (it == a.end()) throw std::runtime_error("no value for " + path);
  return it->second;
}

// The synthetic cost model. Stages with a parallelism knob: latency L, CPU share c, p workers.
// CPU demand D = sum of p x c; past the cores every computing stage slows down by D / cores
// (L' = L x (1 - c + c x max(1, D / cores))). The interval is that of the slowest stage,
// max L' / p, times 1 + thread_overhead for every thread beyond the cores. A prefetch stage
// hides a stall of burst_ms every burst_every elements when its buffer covers it (b x interval);
// the rest of each stall adds to the wall time.
double synthetic_cost(const nlohmann::json& d, const KnobAssignment& a) {
  const double cores = d.at("cores").get<double>();
  const double elements = d.at("elements").get<double>();
  const double overhead = d.value("thread_overhead", 0.0);
  const auto& stages = d.at("stages");
  double demand = 0, threads = 0;
  for (size_t i = 0; i < stages.size(); ++i) {
    if (stages[i].at("knob") != "parallelism") continue;
    const auto p =
        static_cast<double>(value_at(a, "/stages/" + std::to_string(i + 1) + "/parallelism"));
    demand += p * stages[i].at("cpu_share").get<double>();
    threads += p;
  }
  const double slowdown = std::max(1.0, demand / cores);
  double interval = 0;
  for (size_t i = 0; i < stages.size(); ++i) {
    if (stages[i].at("knob") != "parallelism") continue;
    const auto p =
        static_cast<double>(value_at(a, "/stages/" + std::to_string(i + 1) + "/parallelism"));
    const double c = stages[i].at("cpu_share").get<double>();
    const double latency = stages[i].at("latency_ms").get<double>() * (1 - c + c * slowdown);
    interval = std::max(interval, latency / p);
  }
  interval *= 1 + overhead * std::max(0.0, threads - cores);
  double total = elements * interval;
  for (size_t i = 0; i < stages.size(); ++i) {
    if (stages[i].at("knob") != "buffer_size") continue;
    const auto b =
        static_cast<double>(value_at(a, "/stages/" + std::to_string(i + 1) + "/buffer_size"));
    const double stalls = elements / stages[i].at("burst_every").get<double>();
    total += stalls * std::max(0.0, stages[i].at("burst_ms").get<double>() - b * interval);
  }
  return total;
}

}  // namespace

double Problem::cost(const KnobAssignment& assignment) const {
  if (kind == "synthetic") return synthetic_cost(document, complete(knobs, assignment));
  SimOptions options{.step_ms = step_ms(), .epochs = epochs(), .autotune_parallelism = 2};
  const auto r =
      simulate(apply_assignment(document.at("spec"), knobs, assignment), options);
  if (!r.supported) throw std::runtime_error(name + ": the simulator cannot run it: " + r.reason);
  return r.total_ms;
}

double Problem::noisy_cost(const KnobAssignment& assignment, std::mt19937_64& rng) const {
  std::normal_distribution<double> n(0, noise);
  return cost(assignment) * std::max(0.5, 1 + n(rng));
}

double Problem::step_ms() const {
  return document.value("step_ms", 0.0);
}

int64_t Problem::epochs() const {
  return document.value("epochs", int64_t{1});
}

pipelines::Dataset Problem::pipeline() const {
  if (kind == "simulator") return pipelines::parse_pipeline(document.at("spec"), name);
  nlohmann::json stages =
      nlohmann::json::array({{{"op", "range"}, {"stop", document.at("elements")}}});
  for (const auto& s : document.at("stages")) {
    if (s.at("knob") == "parallelism") {
      stages.push_back({{"op", "map"},
                        {"fn", s.at("cpu_share").get<double>() >= 0.5 ? "busy_ms" : "sleep_ms"},
                        {"args", {{"ms", s.at("latency_ms")}}},
                        {"parallelism", "autotune"},
                        {"name", s.at("name")}});
    } else {
      stages.push_back({{"op", "prefetch"}, {"buffer_size", "autotune"}});
    }
  }
  return pipelines::parse_pipeline({{"stages", stages}}, name);
}

Problem load_problem(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw std::runtime_error(file.string() + ": cannot be read");
  Problem p;
  try {
    p.document = nlohmann::json::parse(in);
    p.name = p.document.at("name").get<std::string>();
    p.kind = p.document.at("kind").get<std::string>();
    p.description = p.document.value("description", "");
    p.noise = p.document.value("noise", 0.0);
    if (p.kind == "simulator") {
      p.knobs = discover_knobs(p.document.at("spec"),
                               {.max_parallelism = p.document.value("max_parallelism", int64_t{8}),
                                .max_buffer = p.document.value("max_buffer", int64_t{64}),
                                .initial_parallelism = p.cores});
      pipelines::parse_spec(apply_assignment(p.document.at("spec"), p.knobs, {}), file.string());
    } else if (p.kind == "synthetic") {
      p.cores = p.document.at("cores").get<int64_t>();
      const auto& stages = p.document.at("stages");
      for (size_t i = 0; i < stages.size(); ++i) {
        const std::string knob = stages[i].at("knob").get<std::string>();
        if (knob != "parallelism" && knob != "buffer_size")
          throw std::runtime_error("stages[" + std::to_string(i) + "].knob: " + knob);
        KnobSpec k{
            "/stages/" + std::to_string(i + 1) + "/" + knob,
            stages[i].at("name").get<std::string>(), knob,
            values(knob, stages[i].at("max").get<int64_t>()),
            knob == "parallelism" ? std::min(p.cores, stages[i].at("max").get<int64_t>()) : 2};
        p.knobs.push_back(std::move(k));
      }
    } else {
      throw std::runtime_error("kind: expected \"simulator\" or \"synthetic\", got " + p.kind);
    }
  } catch (const std::exception& e) {
    throw std::runtime_error(file.string() + ": " + e.what());
  }
  if (p.knobs.empty()) throw std::runtime_error(file.string() + ": no knob to tune");
  return p;
}

std::vector<Problem> load_problems(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".json") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  std::vector<Problem> out;
  for (const auto& f : files)
    out.push_back(load_problem(f));
  return out;
}

std::vector<KnobAssignment> grid(const std::vector<KnobSpec>& knobs) {
  std::vector<KnobAssignment> out{{}};
  for (const auto& k : knobs) {
    std::vector<KnobAssignment> next;
    for (const auto& a : out) {
      for (int64_t v : k.values) {
        KnobAssignment b = a;
        b[k.path] = v;
        next.push_back(std::move(b));
      }
    }
    out = std::move(next);
  }
  return out;
}

std::string key_to_pointer(const std::string& key) {
  std::string out = "/";
  for (char c : key) {
    if (c == '[' || c == '.') {
      out += '/';
    } else if (c != ']') {
      out += c;
    }
  }
  return out;
}

}  // namespace pipeprof::autotune::bench
