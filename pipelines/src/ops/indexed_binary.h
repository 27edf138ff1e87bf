// indexed_binary(files, mmap, buffer_size, direct, drop_caches): the samples of Megatron-style
// indexed binary files (formats/indexed_binary.h), each a rank-1 uint8 tensor, in index order.
// With mmap (DLIO's mmap_indexed_binary) a sample is a view of the mapped file; without it
// (indexed_binary) each sample is read with read calls. Samples must lie in file order without
// overlapping (a gap is read past). An index that disagrees with its data file is an error naming
// the index file and the sample.
#pragma once

#include "pipeprof/pipelines/files.h"

namespace pipeprof::pipelines::ops {

class IndexedBinaryNode final : public DatasetNode {
 public:
  IndexedBinaryNode(std::vector<std::string> files, FileReadOptions read);
  std::string_view op() const override { return "indexed_binary"; }
  nlohmann::json params() const override;
  std::unique_ptr<Iterator> make_iterator(const IteratorContext& ctx) const override;

  std::vector<std::string> files;
  FileReadOptions read;
};

}  // namespace pipeprof::pipelines::ops
