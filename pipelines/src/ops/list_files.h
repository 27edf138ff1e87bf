// list_files(pattern, shuffle, seed): tf.data's Dataset.list_files. See pipeprof/pipelines/files.h.
#pragma once

#include <atomic>

#include "pipeprof/pipelines/files.h"

namespace pipeprof::pipelines::ops {

class ListFilesNode final : public DatasetNode {
 public:
  // Exactly one of a pattern and a list of files.
  ListFilesNode(std::string pattern, std::vector<std::string> files, ListFilesOptions options);
  std::string_view op() const override { return "list_files"; }
  nlohmann::json params() const override;
  std::unique_ptr<Iterator> make_iterator(const IteratorContext& ctx) const override;

  std::string pattern;             // empty: the explicit list
  std::vector<std::string> files;  // the files when there is no pattern
  ListFilesOptions options;
  uint64_t base_seed;
  mutable std::atomic<uint64_t> iterations{0};  // epochs started: each gets its own order
};

}  // namespace pipeprof::pipelines::ops
