#include "gl_window.h"

#define GL_GLEXT_PROTOTYPES 1
#include <GL/gl.h>
#include <GL/glext.h>
#include <GLFW/glfw3.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_opengl3.h>
#include <imgui.h>

#include <algorithm>
#include <stdexcept>

#include "pipeprof/viewer/palette.h"

namespace pipeprof::viewer {
namespace {

// GLFW reports errors through a C callback without a user pointer, so the last one is kept here;
// it explains a failed glfwInit or window.
std::string& last_glfw_error() {
  static std::string error;
  return error;
}

void on_glfw_error(int code, const char* description) {
  last_glfw_error() =
      "GLFW error " + std::to_string(code) + ": " + (description ? description : "");
}

}  // namespace

GlWindow::GlWindow(int width, int height, bool offscreen, const std::string& title)
    : offscreen_(offscreen), width_(width), height_(height) {
  glfwSetErrorCallback(on_glfw_error);
  if (glfwInit() == GLFW_FALSE) {
    throw std::runtime_error("cannot open a window (" + last_glfw_error() +
                             "); without a display, run under xvfb-run -a");
  }
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
  glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
  glfwWindowHint(GLFW_OPENGL_FORWARD_COMPAT, GLFW_TRUE);
  glfwWindowHint(GLFW_VISIBLE, offscreen ? GLFW_FALSE : GLFW_TRUE);
  window_ = glfwCreateWindow(width, height, title.c_str(), nullptr, nullptr);
  if (window_ == nullptr) {
    const std::string why = last_glfw_error();
    glfwTerminate();
    throw std::runtime_error("cannot create an OpenGL 3.3 window (" + why + ")");
  }
  glfwMakeContextCurrent(window_);
  glfwSwapInterval(offscreen ? 0 : 1);
  glfwSetWindowUserPointer(window_, this);
  glfwSetDropCallback(window_, &GlWindow::on_drop);

  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = nullptr;  // no imgui.ini in the working folder
  ImGui::StyleColorsDark();
  ImGui_ImplGlfw_InitForOpenGL(window_, true);
  ImGui_ImplOpenGL3_Init("#version 330 core");

  if (offscreen_) {
    glGenFramebuffers(1, &framebuffer_);
    glGenRenderbuffers(1, &colour_buffer_);
    glBindRenderbuffer(GL_RENDERBUFFER, colour_buffer_);
    glRenderbufferStorage(GL_RENDERBUFFER, GL_RGBA8, width, height);
    glBindFramebuffer(GL_FRAMEBUFFER, framebuffer_);
    glFramebufferRenderbuffer(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_RENDERBUFFER,
                              colour_buffer_);
    if (glCheckFramebufferStatus(GL_FRAMEBUFFER) != GL_FRAMEBUFFER_COMPLETE)
      throw std::runtime_error("cannot create an offscreen framebuffer of " +
                               std::to_string(width) + "x" + std::to_string(height));
  }
}

GlWindow::~GlWindow() {
  if (framebuffer_ != 0) glDeleteFramebuffers(1, &framebuffer_);
  if (colour_buffer_ != 0) glDeleteRenderbuffers(1, &colour_buffer_);
  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  glfwDestroyWindow(window_);
  glfwTerminate();
}

bool GlWindow::should_close() const {
  return glfwWindowShouldClose(window_) != 0;
}

void GlWindow::request_close() {
  glfwSetWindowShouldClose(window_, GLFW_TRUE);
}

void GlWindow::new_frame(double wait_s) {
  if (wait_s > 0.0) {
    glfwWaitEventsTimeout(wait_s);
  } else {
    glfwPollEvents();
  }
  ImGui_ImplOpenGL3_NewFrame();
  ImGui_ImplGlfw_NewFrame();
  ImGuiIO& io = ImGui::GetIO();
  if (offscreen_) {
    io.DisplaySize = ImVec2(static_cast<float>(width_), static_cast<float>(height_));
    io.DisplayFramebufferScale = ImVec2(1.0f, 1.0f);
  } else {
    width_ = static_cast<int>(io.DisplaySize.x);
    height_ = static_cast<int>(io.DisplaySize.y);
  }
  ImGui::NewFrame();
}

void GlWindow::render() {
  ImGui::Render();
  int fb_w = width_, fb_h = height_;
  if (offscreen_) {
    glBindFramebuffer(GL_FRAMEBUFFER, framebuffer_);
  } else {
    glfwGetFramebufferSize(window_, &fb_w, &fb_h);
  }
  glViewport(0, 0, fb_w, fb_h);
  glClearColor(static_cast<float>(red(kCanvasBackground)) / 255.0f,
               static_cast<float>(green(kCanvasBackground)) / 255.0f,
               static_cast<float>(blue(kCanvasBackground)) / 255.0f, 1.0f);
  glClear(GL_COLOR_BUFFER_BIT);
  ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
  if (!offscreen_) glfwSwapBuffers(window_);
}

void GlWindow::finish() {
  glFinish();
}

std::vector<uint8_t> GlWindow::read_pixels() const {
  const auto w = static_cast<size_t>(width_);
  const auto h = static_cast<size_t>(height_);
  std::vector<uint8_t> bottom_up(w * h * 4);
  glBindFramebuffer(GL_FRAMEBUFFER, framebuffer_);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadPixels(0, 0, width_, height_, GL_RGBA, GL_UNSIGNED_BYTE, bottom_up.data());
  std::vector<uint8_t> top_down(bottom_up.size());
  for (size_t y = 0; y < h; ++y) {
    std::copy_n(bottom_up.begin() + static_cast<std::ptrdiff_t>((h - 1 - y) * w * 4), w * 4,
                top_down.begin() + static_cast<std::ptrdiff_t>(y * w * 4));
  }
  return top_down;
}

std::vector<std::string> GlWindow::take_dropped_paths() {
  std::vector<std::string> out;
  out.swap(dropped_);
  return out;
}

void GlWindow::set_title(const std::string& title) {
  glfwSetWindowTitle(window_, title.c_str());
}

void GlWindow::on_drop(GLFWwindow* window, int count, const char** paths) {
  auto* self = static_cast<GlWindow*>(glfwGetWindowUserPointer(window));
  if (self == nullptr) return;
  for (int i = 0; i < count; ++i)
    self->dropped_.emplace_back(paths[i]);
}

}  // namespace pipeprof::viewer
