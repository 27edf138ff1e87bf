// UTF-8 validity, for text that ends up in JSON (results files, traces): a reader checks it where
// the text comes in, so that the file and key can be named, instead of the writer failing later.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace pipeprof::trace {

// Byte offset of the first invalid UTF-8 sequence in `s` (overlong forms, surrogates and code
// points above U+10FFFF are invalid), or nullopt when all of `s` is valid.
std::optional<size_t> first_invalid_utf8(std::string_view s);

}  // namespace pipeprof::trace
