// The horizontal mapping of the timeline: which times are visible and how many nanoseconds one
// pixel covers. Times are nanoseconds relative to the trace's start (in compare mode each trace's
// own start), pixels are counted from the left edge of the timeline area.
#pragma once

#include <string>
#include <vector>

namespace pipeprof::viewer {

class TimeView {
 public:
  // Finest zoom: a thousandth of a nanosecond per pixel (timestamps are whole nanoseconds).
  static constexpr double kMinNsPerPx = 1e-3;

  TimeView() = default;

  // Width of the timeline area in pixels (at least 1); keeps the left edge and the scale.
  void set_width(double width_px);
  // The extent of the data, [lo, hi]: zooming out stops when it fills the width four times over
  // and panning stops when either end reaches the middle of the view.
  void set_limits(double lo_ns, double hi_ns);
  // Shows exactly [t0, t1] (t1 > t0), within the limits.
  void show(double t0_ns, double t1_ns);
  // Shows the whole extent with a small margin on each side.
  void fit();
  // Zooms by `factor` (> 1: in, < 1: out) keeping the time under pixel `x_px` where it is.
  void zoom_at(double x_px, double factor);
  // Moves the content by `dx_px` pixels (positive: to the right, i.e. earlier times come into
  // view), as when the mouse drags it.
  void pan_px(double dx_px);

  double start() const { return start_; }
  double end() const { return start_ + width_ * ns_per_px_; }
  double ns_per_px() const { return ns_per_px_; }
  double width() const { return width_; }
  double limit_lo() const { return lo_; }
  double limit_hi() const { return hi_; }

  double to_time(double x_px) const { return start_ + x_px * ns_per_px_; }
  double to_px(double t_ns) const { return (t_ns - start_) / ns_per_px_; }

 private:
  double max_ns_per_px() const;
  void clamp();

  double start_ = 0.0;
  double ns_per_px_ = 1.0;
  double width_ = 1.0;
  double lo_ = 0.0;
  double hi_ = 1.0;
};

// Grid lines of the time ruler: a 1-2-5 step whose spacing is at least `min_spacing_px`, and the
// multiples of it inside the view.
double tick_step(double ns_per_px, double min_spacing_px);
std::vector<double> tick_times(const TimeView& view, double min_spacing_px);

// "850 ns", "12.5 us", "3.204 ms", "1.5 s": three significant digits or more.
std::string format_duration(double ns);
// A ruler label for time `t_ns` on a grid of `step_ns`, with just the decimals the step needs.
std::string format_tick(double t_ns, double step_ns);

}  // namespace pipeprof::viewer
