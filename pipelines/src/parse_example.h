// The parse_example map function: decodes a serialized tf.Example (a record of tfrecord) into one
// tensor per requested feature, in the order requested:
//
//   {"fn": "parse_example", "args": {"features": [{"key": "image", "type": "bytes"},
//                                                 {"key": "size", "type": "int64"}]}}
//
// A bytes feature becomes a rank-1 uint8 tensor of its one value; an int64 (float) feature a
// rank-1 int64 (float32) tensor of all its values. A missing feature, a feature of another type, a
// bytes feature without exactly one value or a malformed Example is an error naming the key.
#pragma once

#include <nlohmann/json.hpp>

#include "pipeprof/pipelines/dataset.h"
#include "spec_fields.h"

namespace pipeprof::pipelines {

Function make_parse_example(const spec_detail::Fields& args_fields, const nlohmann::json& args);

}  // namespace pipeprof::pipelines
