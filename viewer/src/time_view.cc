#include "pipeprof/viewer/time_view.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace pipeprof::viewer {

void TimeView::set_width(double width_px) {
  width_ = std::max(1.0, std::isfinite(width_px) ? width_px : 1.0);
  clamp();
}

void TimeView::set_limits(double lo_ns, double hi_ns) {
  if (!std::isfinite(lo_ns) || !std::isfinite(hi_ns)) return;
  lo_ = std::min(lo_ns, hi_ns);
  hi_ = std::max(lo_ns, hi_ns);
  if (hi_ - lo_ < 1.0) hi_ = lo_ + 1.0;  // an empty trace still has a scale
  clamp();
}

void TimeView::show(double t0_ns, double t1_ns) {
  if (!std::isfinite(t0_ns) || !std::isfinite(t1_ns)) return;
  if (t1_ns < t0_ns) std::swap(t0_ns, t1_ns);
  const double len = std::max(t1_ns - t0_ns, kMinNsPerPx * width_);
  start_ = t0_ns;
  ns_per_px_ = len / width_;
  clamp();
}

void TimeView::fit() {
  const double margin = (hi_ - lo_) * 0.01;
  show(lo_ - margin, hi_ + margin);
}

void TimeView::zoom_at(double x_px, double factor) {
  if (!(factor > 0.0) || !std::isfinite(factor)) return;
  const double anchor = to_time(x_px);
  ns_per_px_ = std::clamp(ns_per_px_ / factor, kMinNsPerPx, max_ns_per_px());
  start_ = anchor - x_px * ns_per_px_;
  clamp();
}

void TimeView::pan_px(double dx_px) {
  if (!std::isfinite(dx_px)) return;
  start_ -= dx_px * ns_per_px_;
  clamp();
}

double TimeView::max_ns_per_px() const {
  return std::max(kMinNsPerPx, 4.0 * (hi_ - lo_) / width_);
}

void TimeView::clamp() {
  ns_per_px_ = std::clamp(ns_per_px_, kMinNsPerPx, max_ns_per_px());
  const double half = 0.5 * width_ * ns_per_px_;
  start_ = std::clamp(start_, lo_ - half, std::max(lo_ - half, hi_ - half));
}

double tick_step(double ns_per_px, double min_spacing_px) {
  const double min_step = std::max(ns_per_px * min_spacing_px, 1e-6);
  double decade = std::pow(10.0, std::floor(std::log10(min_step)));
  for (;;) {
    for (const double m : {1.0, 2.0, 5.0}) {
      if (decade * m >= min_step * (1.0 - 1e-9)) return decade * m;
    }
    decade *= 10.0;
  }
}

std::vector<double> tick_times(const TimeView& view, double min_spacing_px) {
  const double step = tick_step(view.ns_per_px(), min_spacing_px);
  std::vector<double> ticks;
  for (double k = std::ceil(view.start() / step); k * step <= view.end(); k += 1.0)
    ticks.push_back(k * step);
  return ticks;
}

namespace {

struct Unit {
  double scale;
  const char* suffix;
};

Unit unit_for(double magnitude_ns) {
  if (magnitude_ns >= 1e9) return {1e9, "s"};
  if (magnitude_ns >= 1e6) return {1e6, "ms"};
  if (magnitude_ns >= 1e3) return {1e3, "us"};
  return {1.0, "ns"};
}

}  // namespace

std::string format_duration(double ns) {
  if (!std::isfinite(ns)) return "?";
  const Unit u = unit_for(std::abs(ns));
  const double v = ns / u.scale;
  const double a = std::abs(v);
  const int decimals = u.scale == 1.0 ? (a >= 100.0 || a == std::floor(a) ? 0 : 1)
                                      : (a >= 100.0 ? 1 : (a >= 10.0 ? 2 : 3));
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f %s", decimals, v, u.suffix);
  return buf;
}

std::string format_tick(double t_ns, double step_ns) {
  if (std::abs(t_ns) < step_ns * 1e-6) t_ns = 0.0;  // no "-0 ms"
  const Unit u = unit_for(std::max(std::abs(t_ns), step_ns));
  const double step = step_ns / u.scale;
  int decimals = 0;
  while (decimals < 9 && step * std::pow(10.0, decimals) < 0.999)
    ++decimals;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f %s", decimals, t_ns / u.scale, u.suffix);
  return buf;
}

}  // namespace pipeprof::viewer
