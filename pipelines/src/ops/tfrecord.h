// tfrecord(files, compression, verify_crc, buffer_size, direct, drop_caches): tf.data's
// TFRecordDataset. Each record is a rank-1 uint8 tensor of its bytes; the files are read one after
// the other. A corrupt or truncated record is an error naming the file and its byte offset.
#pragma once

#include "pipeprof/pipelines/files.h"

namespace pipeprof::pipelines::ops {

class TFRecordNode final : public DatasetNode {
 public:
  TFRecordNode(std::vector<std::string> files, TFRecordOptions options);
  std::string_view op() const override { return "tfrecord"; }
  nlohmann::json params() const override;
  std::unique_ptr<Iterator> make_iterator(const IteratorContext& ctx) const override;

  std::vector<std::string> files;
  TFRecordOptions options;
};

}  // namespace pipeprof::pipelines::ops
