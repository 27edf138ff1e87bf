// The image functions of functions.h (the CPU work of an image pipeline), built from their spec
// arguments: decode_jpeg, resize, random_crop, flip and normalize. Each works on component 0 of the element
// (the image) and passes the other components through.
#pragma once

#include <nlohmann/json.hpp>

#include "pipeprof/pipelines/dataset.h"
#include "spec_fields.h"

namespace pipeprof::pipelines::image {

Function decode_jpeg(const spec_detail::Fields& f, const nlohmann::json& args);
Function resize(const spec_detail::Fields& f, const nlohmann::json& args);
Function random_crop(const spec_detail::Fields& f, const nlohmann::json& args);
Function flip(const spec_detail::Fields& f, const nlohmann::json& args);
// normalize {mean, std}: float32 (x / 255 - mean) / std, per channel (a number, or 3 of them).
Function normalize(const spec_detail::Fields& f, const nlohmann::json& args);

}  // namespace pipeprof::pipelines::image
