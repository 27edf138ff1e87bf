// The platform layer: a GLFW window with an OpenGL 3.3 core context and Dear ImGui's GLFW and
// OpenGL 3 backends. For screenshots and benchmarks the window stays hidden and frames render into
// an offscreen framebuffer of a fixed size, so the result does not depend on the screen.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

struct GLFWwindow;

namespace pipeprof::viewer {

class GlWindow {
 public:
  // Throws std::runtime_error (naming GLFW's complaint) when no window or context can be made.
  GlWindow(int width, int height, bool offscreen, const std::string& title);
  ~GlWindow();
  GlWindow(const GlWindow&) = delete;
  GlWindow& operator=(const GlWindow&) = delete;

  bool should_close() const;
  void request_close();
  // Polls events (waiting up to `wait_s` for one when > 0) and starts an ImGui frame.
  void new_frame(double wait_s = 0.0);
  // Renders the ImGui frame; on screen it also swaps buffers.
  void render();
  // Waits until the GPU (or Mesa's software rasterizer) has finished the frame.
  void finish();
  // The offscreen frame as RGBA rows, top row first.
  std::vector<uint8_t> read_pixels() const;
  int width() const { return width_; }
  int height() const { return height_; }

  // Paths dropped onto the window since the last call.
  std::vector<std::string> take_dropped_paths();
  void set_title(const std::string& title);

 private:
  static void on_drop(GLFWwindow* window, int count, const char** paths);

  GLFWwindow* window_ = nullptr;
  bool offscreen_ = false;
  int width_ = 0;
  int height_ = 0;
  unsigned framebuffer_ = 0;
  unsigned colour_buffer_ = 0;
  std::vector<std::string> dropped_;
};

// Writes RGBA pixels (top row first) as a PNG; throws std::runtime_error naming the path.
void write_png(const std::string& path, int width, int height, const std::vector<uint8_t>& rgba);

}  // namespace pipeprof::viewer
