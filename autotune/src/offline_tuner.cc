#include "pipeprof/autotune/offline_tuner.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <stdexcept>

namespace pipeprof::autotune {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// A point of the space as one index per knob.
using Point = std::vector<size_t>;

struct Samples {
  std::vector<double> values;
  double mean() const {
    double s = 0;
    for (double v : values)
      s += v;
    return values.empty() ? kInf : s / static_cast<double>(values.size());
  }
  double variance() const {
    if (values.size() < 2) return 0;
    const double m = mean();
    double s = 0;
    for (double v : values)
      s += (v - m) * (v - m);
    return s / static_cast<double>(values.size() - 1);
  }
};

class Search {
 public:
  Search(const std::vector<KnobSpec>& knobs, const TrialFn& fn, const OfflineOptions& o)
      : knobs_(knobs), fn_(fn), o_(o), rng_(o.seed) {
    space_ = 1;
    for (const auto& k : knobs_) {
      if (k.values.empty()) throw std::invalid_argument("knob " + k.path + " has no values");
      space_ = std::min(space_ * static_cast<double>(k.values.size()), 1e18);
    }
  }

  bool spent() const { return static_cast<int>(result_.trials.size()) >= o_.budget; }

  KnobAssignment assignment(const Point& p) const {
    KnobAssignment a;
    for (size_t i = 0; i < knobs_.size(); ++i)
      a[knobs_[i].path] = knobs_[i].values[p[i]];
    return a;
  }

  // One measurement of `p`; returns its objective value (infinite when the trial failed).
  double measure(const Point& p, const std::string& phase) {
    Trial t;
    t.index = static_cast<int>(result_.trials.size());
    t.knobs = assignment(p);
    t.measurement = fn_(t.knobs);
    t.value = t.measurement.ok ? objective_value(t.measurement, o_.objective) : kInf;
    t.phase = phase;
    samples_[p].values.push_back(t.value);
    visited_.insert(p);
    // The best point: by mean among points with enough samples (hill), else by single value.
    const size_t need = o_.strategy == Strategy::kHill ? static_cast<size_t>(o_.repeats) : 1;
    best_value_ = kInf;
    for (const auto& [q, s] : samples_) {
      if (s.values.size() >= need && s.mean() < best_value_) {
        best_value_ = s.mean();
        best_ = q;
      }
    }
    if (!best_.empty()) {
      t.best = assignment(best_);
      t.best_value = best_value_;
    }
    result_.trials.push_back(t);
    if (o_.on_trial) o_.on_trial(result_.trials.back());
    return t.value;
  }

  Point initial() const {
    Point p;
    for (const auto& k : knobs_) {
      auto it = std::find(k.values.begin(), k.values.end(), k.initial);
      p.push_back(it == k.values.end() ? 0 : static_cast<size_t>(it - k.values.begin()));
    }
    return p;
  }

  Point random_point() {
    Point p;
    for (const auto& k : knobs_)
      p.push_back(std::uniform_int_distribution<size_t>(0, k.values.size() - 1)(rng_));
    return p;
  }

  // A random point not visited yet (a bounded number of draws, then a scan).
  std::optional<Point> unvisited() {
    if (static_cast<double>(visited_.size()) >= space_) return std::nullopt;
    for (int i = 0; i < 64; ++i) {
      Point p = random_point();
      if (!visited_.contains(p)) return p;
    }
    Point p(knobs_.size(), 0);
    while (true) {
      if (!visited_.contains(p)) return p;
      size_t i = knobs_.size();
      while (i > 0) {
        --i;
        if (++p[i] < knobs_[i].values.size()) break;
        p[i] = 0;
        if (i == 0) return std::nullopt;
      }
    }
  }

  void grid() {
    Point p(knobs_.size(), 0);
    while (!spent()) {
      measure(p, "grid");
      size_t i = knobs_.size();
      bool carried = true;
      while (carried && i > 0) {
        --i;
        carried = ++p[i] == knobs_[i].values.size();
        if (carried) p[i] = 0;
      }
      if (carried) {
        result_.stopped = "space exhausted";
        return;
      }
    }
    result_.stopped = "budget";
  }

  void random() {
    while (!spent()) {
      auto p = unvisited();
      if (!p) {
        result_.stopped = "space exhausted";
        return;
      }
      measure(*p, "random");
    }
    result_.stopped = "budget";
  }

  // Measures `p` until it has `repeats` samples (or the budget ends).
  void fill(const Point& p, const std::string& phase) {
    while (samples_[p].values.size() < static_cast<size_t>(o_.repeats) && !spent())
      measure(p, phase);
  }

  // Whether `challenger` beats `incumbent` beyond the noise.
  bool wins(const Point& challenger, const Point& incumbent) {
    const Samples& c = samples_[challenger];
    const Samples& i = samples_[incumbent];
    if (c.values.size() < static_cast<size_t>(o_.repeats)) return false;
    const double se = std::sqrt(c.variance() / static_cast<double>(c.values.size()) +
                                i.variance() / static_cast<double>(i.values.size()));
    const double margin = std::max(o_.z * se, o_.min_improvement * std::abs(i.mean()));
    return c.mean() < i.mean() - margin;
  }

  // Tries moving `current` by each of `moves` (knob, signed step) in turn; true when one won and
  // `current` is now that neighbour.
  bool try_moves(Point& current, const std::vector<std::pair<size_t, int>>& moves,
                 std::pair<size_t, int>& last_move) {
    for (const auto& [k, d] : moves) {
      if (spent()) return false;
      const auto to = static_cast<std::ptrdiff_t>(current[k]) + d;
      if (to < 0 || to >= static_cast<std::ptrdiff_t>(knobs_[k].values.size())) continue;
      Point next = current;
      next[k] = static_cast<size_t>(to);
      const bool fresh = samples_[next].values.empty();
      if (fresh) {
        // One look first: a neighbour clearly worse than the current point is dropped.
        const Samples& cur = samples_[current];
        if (measure(next, "neighbour") >= cur.mean() + o_.z * std::sqrt(cur.variance())) continue;
      }
      fill(next, "neighbour");
      // Promising but not yet beyond the noise: more measurements of both, up to max_repeats.
      while (!spent() && !wins(next, current) &&
             samples_[next].mean() < samples_[current].mean() * (1 - o_.min_improvement) &&
             samples_[next].values.size() < static_cast<size_t>(o_.max_repeats)) {
        measure(next, "neighbour");
        if (!spent() && samples_[current].values.size() < samples_[next].values.size())
          measure(current, "confirm");
      }
      if (wins(next, current)) {
        current = next;
        last_move = {k, d > 0 ? 1 : -1};
        return true;
      }
    }
    return false;
  }

  void hill() {
    Point current = initial();
    std::string phase = "start";
    std::pair<size_t, int> last_move{0, 0};  // knob, direction of the last winning move
    while (!spent()) {
      fill(current, phase);
      if (spent()) break;
      // Neighbours: the last winning direction first, the others shuffled.
      std::vector<std::pair<size_t, int>> moves;
      for (size_t k = 0; k < knobs_.size(); ++k) {
        for (int d : {-1, +1})
          moves.emplace_back(k, d);
      }
      std::shuffle(moves.begin(), moves.end(), rng_);
      if (last_move.second != 0) {
        auto it = std::find(moves.begin(), moves.end(), last_move);
        std::rotate(moves.begin(), it, it + 1);
      }
      if (try_moves(current, moves, last_move)) {
        phase = "neighbour";
        continue;
      }
      // No neighbour wins: steps of two, which cross a plateau (a knob's next value measures
      // alike, the better one lies beyond it: one DataLoader worker costs about what two do,
      // none is faster) before the search gives up this point.
      // The direction whose neighbour measured best goes first.
      const auto neighbour_mean = [&](const std::pair<size_t, int>& move) {
        const auto to = static_cast<std::ptrdiff_t>(current[move.first]) + move.second;
        if (to < 0 || to >= static_cast<std::ptrdiff_t>(knobs_[move.first].values.size()))
          return kInf;
        Point p = current;
        p[move.first] = static_cast<size_t>(to);
        const auto it = samples_.find(p);
        return it == samples_.end() ? kInf : it->second.mean();
      };
      std::stable_sort(moves.begin(), moves.end(), [&](const auto& x, const auto& y) {
        return neighbour_mean(x) < neighbour_mean(y);
      });
      for (auto& move : moves)
        move.second *= 2;
      if (try_moves(current, moves, last_move)) {
        phase = "neighbour";
        continue;
      }
      // A local optimum: restart from a random unvisited point.
      auto restart = unvisited();
      if (!restart) {
        result_.stopped = "space exhausted";
        return;
      }
      current = *restart;
      last_move = {0, 0};
      phase = "restart";
    }
    result_.stopped = "budget";
  }

  OfflineResult finish() {
    if (best_.empty()) {
      // Nothing measured `repeats` times: the best single measurement.
      for (const auto& [q, s] : samples_) {
        if (s.mean() < best_value_ || best_.empty()) {
          best_value_ = s.mean();
          best_ = q;
        }
      }
    }
    result_.best = best_.empty() ? complete(knobs_, {}) : assignment(best_);
    result_.best_value = best_value_;
    return std::move(result_);
  }

 private:
  const std::vector<KnobSpec>& knobs_;
  const TrialFn& fn_;
  const OfflineOptions& o_;
  std::mt19937_64 rng_;
  double space_ = 1;
  std::map<Point, Samples> samples_;
  std::set<Point> visited_;
  Point best_;
  double best_value_ = kInf;
  OfflineResult result_;
};

}  // namespace

Strategy parse_strategy(const std::string& name) {
  if (name == "hill") return Strategy::kHill;
  if (name == "random") return Strategy::kRandom;
  if (name == "grid") return Strategy::kGrid;
  throw std::invalid_argument("unknown strategy '" + name + "' (expected hill, random or grid)");
}

Objective parse_objective(const std::string& name) {
  if (name == "throughput") return Objective::kThroughput;
  if (name == "wait") return Objective::kWait;
  throw std::invalid_argument("unknown objective '" + name + "' (expected throughput or wait)");
}

std::string to_string(Strategy s) {
  switch (s) {
    case Strategy::kHill:
      return "hill";
    case Strategy::kRandom:
      return "random";
    case Strategy::kGrid:
      return "grid";
  }
  return "?";
}

std::string to_string(Objective o) {
  return o == Objective::kThroughput ? "throughput" : "wait";
}

double objective_value(const Measurement& m, Objective objective) {
  return objective == Objective::kThroughput ? m.wall_ms : m.wait_ms;
}

OfflineResult tune_offline(const std::vector<KnobSpec>& knobs, const TrialFn& trial,
                           const OfflineOptions& options) {
  if (knobs.empty()) throw std::invalid_argument("the spec has no \"autotune\" knob to tune");
  if (options.budget < 1) throw std::invalid_argument("the budget must be at least 1 trial");
  OfflineOptions o = options;
  o.repeats = std::max(1, o.repeats);
  o.max_repeats = std::max(o.repeats, o.max_repeats);
  Search search(knobs, trial, o);
  switch (o.strategy) {
    case Strategy::kGrid:
      search.grid();
      break;
    case Strategy::kRandom:
      search.random();
      break;
    case Strategy::kHill:
      search.hill();
      break;
  }
  return search.finish();
}

nlohmann::json to_json(const OfflineResult& r, const std::vector<KnobSpec>& knobs,
                       const OfflineOptions& o) {
  nlohmann::json trials = nlohmann::json::array();
  for (const auto& t : r.trials) {
    nlohmann::json values = nlohmann::json::object();
    for (const auto& [path, v] : t.knobs)
      values[path] = v;
    nlohmann::json j{
        {"index", t.index},
        {"phase", t.phase},
        {"knobs", values},
        {"wall_ms", t.measurement.wall_ms},
        {"wait_ms", t.measurement.wait_ms},
        {"value", t.measurement.ok ? nlohmann::json(t.value) : nlohmann::json()},
        {"best_value", std::isfinite(t.best_value) && !t.best.empty() ? nlohmann::json(t.best_value)
                                                                      : nlohmann::json()}};
    if (!t.measurement.ok) j["error"] = t.measurement.error;
    trials.push_back(std::move(j));
  }
  return {
      {"strategy", to_string(o.strategy)},
      {"objective", to_string(o.objective)},
      {"budget", o.budget},
      {"repeats", o.repeats},
      {"stopped", r.stopped},
      {"best", to_json(r.best, knobs)},
      {"best_value", std::isfinite(r.best_value) ? nlohmann::json(r.best_value) : nlohmann::json()},
      {"trials", trials}};
}

}  // namespace pipeprof::autotune
