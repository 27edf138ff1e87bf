#include <stb_image_write.h>

#include <stdexcept>

#include "gl_window.h"

namespace pipeprof::viewer {

void write_png(const std::string& path, int width, int height, const std::vector<uint8_t>& rgba) {
  if (width <= 0 || height <= 0 ||
      rgba.size() != static_cast<size_t>(width) * static_cast<size_t>(height) * 4)
    throw std::runtime_error(path + ": no image to write");
  if (stbi_write_png(path.c_str(), width, height, 4, rgba.data(), width * 4) == 0)
    throw std::runtime_error(path + ": cannot write the PNG file");
}

}  // namespace pipeprof::viewer
