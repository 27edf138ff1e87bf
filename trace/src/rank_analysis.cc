// Per-rank table, the slowest rank and its cause (rules in rank_analysis.h).
#include "pipeprof/trace/rank_analysis.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <stdexcept>

namespace pipeprof::trace {
namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

void summarize(RankAnalysis& r) {
  const std::vector<StepTime>& steps = r.analysis.step_times;
  r.steps = static_cast<int64_t>(steps.size());
  if (steps.empty()) return;
  int64_t total = 0;
  std::array<int64_t, kStepCategories> sums{};
  for (const StepTime& s : steps) {
    total += s.duration_ns();
    for (size_t c = 0; c < kStepCategories; ++c)
      sums[c] += s.breakdown_ns[c];
  }
  const double n = static_cast<double>(steps.size());
  r.mean_step_ms = static_cast<double>(total) / 1e6 / n;
  for (size_t c = 0; c < kStepCategories; ++c)
    r.mean_breakdown_ms[c] = static_cast<double>(sums[c]) / 1e6 / n;
  if (r.analysis.torch.present) {
    r.input_bound_pct = r.analysis.torch.input_bound_pct;
    r.verdict = r.analysis.torch.verdict;
  } else {
    r.input_bound_pct = r.analysis.steps.input_bound_pct;
    r.verdict = r.analysis.steps.verdict;
  }
}

}  // namespace

std::vector<std::pair<int, std::filesystem::path>> find_rank_traces(
    const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    throw std::runtime_error(dir.string() + ": not a folder");
  std::vector<std::pair<int, std::filesystem::path>> out;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    // rank-<N>.json, compressed or not (the reader recognises gzip and zstd by their bytes).
    size_t suffix = 0;
    for (const std::string_view s : {".json", ".json.gz", ".json.zst"})
      if (name.ends_with(s)) suffix = s.size();
    if (!name.starts_with("rank-") || suffix == 0 || name.size() < 5 + suffix) continue;
    const std::string_view digits(name.data() + 5, name.size() - 5 - suffix);
    int rank = 0;
    const auto [end, err] = std::from_chars(digits.data(), digits.data() + digits.size(), rank);
    if (err != std::errc() || end != digits.data() + digits.size() || digits.empty()) continue;
    out.emplace_back(rank, entry.path());
  }
  if (ec) throw std::runtime_error(dir.string() + ": cannot list the folder: " + ec.message());
  if (out.empty()) throw std::runtime_error(dir.string() + ": no rank-<N>.json traces in the folder");
  std::sort(out.begin(), out.end());
  return out;
}

RankComparison compare_ranks(std::vector<RankAnalysis> ranks) {
  RankComparison c;
  std::sort(ranks.begin(), ranks.end(),
            [](const RankAnalysis& a, const RankAnalysis& b) { return a.rank < b.rank; });
  for (RankAnalysis& r : ranks)
    summarize(r);
  c.ranks = std::move(ranks);
  for (size_t i = 0; i < c.ranks.size(); ++i) {
    if (c.ranks[i].steps == 0) continue;
    if (c.slowest < 0 || c.ranks[i].mean_step_ms > c.ranks[static_cast<size_t>(c.slowest)].mean_step_ms)
      c.slowest = static_cast<int>(i);
  }
  if (c.slowest < 0) return c;
  const RankAnalysis& slow = c.ranks[static_cast<size_t>(c.slowest)];
  std::vector<double> others;
  std::array<std::vector<double>, kStepCategories> other_cats;
  for (size_t i = 0; i < c.ranks.size(); ++i) {
    if (static_cast<int>(i) == c.slowest || c.ranks[i].steps == 0) continue;
    others.push_back(c.ranks[i].mean_step_ms);
    for (size_t k = 0; k < kStepCategories; ++k)
      other_cats[k].push_back(c.ranks[i].mean_breakdown_ms[k]);
  }
  if (others.empty()) return c;
  c.median_step_ms = median(others);
  size_t worst = 0;
  double excess = -1e300;
  for (size_t k = 0; k < kStepCategories; ++k) {
    const double e = slow.mean_breakdown_ms[k] - median(other_cats[k]);
    if (e > excess) {
      excess = e;
      worst = k;
    }
  }
  c.cause = std::string(step_category_name(static_cast<StepCategory>(worst)));
  c.cause_excess_ms = excess;
  return c;
}

nlohmann::json to_json(const RankComparison& c) {
  nlohmann::json j;
  j["ranks"] = nlohmann::json::array();
  for (const RankAnalysis& r : c.ranks) {
    nlohmann::json b = nlohmann::json::object();
    for (size_t k = 0; k < kStepCategories; ++k)
      b[std::string(step_category_name(static_cast<StepCategory>(k)))] = r.mean_breakdown_ms[k];
    j["ranks"].push_back({{"rank", r.rank},
                          {"file", r.file},
                          {"steps", r.steps},
                          {"mean_step_ms", r.mean_step_ms},
                          {"input_bound_pct", r.input_bound_pct},
                          {"verdict", r.verdict},
                          {"mean_breakdown_ms", b},
                          {"analysis", to_json(r.analysis)}});
  }
  if (c.slowest >= 0) {
    const RankAnalysis& s = c.ranks[static_cast<size_t>(c.slowest)];
    j["slowest"] = {{"rank", s.rank},
                    {"mean_step_ms", s.mean_step_ms},
                    {"others_median_step_ms", c.median_step_ms},
                    {"cause", c.cause.empty() ? nlohmann::json(nullptr) : nlohmann::json(c.cause)},
                    {"cause_excess_ms_per_step", c.cause_excess_ms}};
  } else {
    j["slowest"] = nullptr;
  }
  return j;
}

std::string format_text(const RankComparison& c) {
  std::string out = "per-rank steps (mean ms per step; breakdown by TensorBoard's priority rule)\n";
  out += fmt::format("  {:>4}  {:>6}  {:>10}  {:>7}", "rank", "steps", "step ms", "input %");
  for (size_t k = 0; k < kStepCategories; ++k)
    out += fmt::format("  {:>10}", step_category_name(static_cast<StepCategory>(k)).substr(0, 10));
  out += "  verdict\n";
  for (const RankAnalysis& r : c.ranks) {
    out += fmt::format("  {:>4}  {:>6}  {:>10.3f}  {:>6.1f}%", r.rank, r.steps, r.mean_step_ms,
                       r.input_bound_pct);
    for (size_t k = 0; k < kStepCategories; ++k)
      out += fmt::format("  {:>10.3f}", r.mean_breakdown_ms[k]);
    out += "  " + (r.steps > 0 ? r.verdict : std::string("no steps")) + "\n";
  }
  if (c.slowest < 0) {
    out += "\nno rank has steps (ProfilerStep#N spans or a train loop)\n";
    return out;
  }
  const RankAnalysis& s = c.ranks[static_cast<size_t>(c.slowest)];
  if (c.cause.empty()) {
    out += fmt::format("\nslowest rank: {} (mean step {:.3f} ms; one rank, nothing to compare)\n",
                       s.rank, s.mean_step_ms);
    return out;
  }
  const double over = c.median_step_ms > 0 ? 100.0 * (s.mean_step_ms / c.median_step_ms - 1) : 0;
  out += fmt::format(
      "\nslowest rank: {} (mean step {:.3f} ms, {:+.1f}% against the other ranks' median {:.3f} "
      "ms)\ncause: {}, {:+.3f} ms per step over the other ranks' median\n",
      s.rank, s.mean_step_ms, over, c.median_step_ms, c.cause, c.cause_excess_ms);
  for (const Suggestion& g : s.analysis.torch.suggestions)
    out += fmt::format("rank {} suggestion ({}): {}\n", s.rank, g.knob, g.text);
  return out;
}

}  // namespace pipeprof::trace
