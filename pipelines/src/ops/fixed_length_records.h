// fixed_length_records(files, record_bytes, header_bytes, footer_bytes, buffer_size, direct,
// drop_caches): tf.data's FixedLengthRecordDataset. Each record is a rank-1 uint8 tensor of
// record_bytes bytes; each file's header and footer are skipped. A file whose size is not
// header + a whole number of records + footer is an error naming it and the partial record.
#pragma once

#include "pipeprof/pipelines/files.h"

namespace pipeprof::pipelines::ops {

inline constexpr int64_t kMaxFixedRecordBytes = int64_t{1} << 31;

class FixedLengthRecordsNode final : public DatasetNode {
 public:
  FixedLengthRecordsNode(std::vector<std::string> files, FixedLengthRecordOptions options);
  std::string_view op() const override { return "fixed_length_records"; }
  nlohmann::json params() const override;
  std::unique_ptr<Iterator> make_iterator(const IteratorContext& ctx) const override;

  std::vector<std::string> files;
  FixedLengthRecordOptions options;
};

}  // namespace pipeprof::pipelines::ops
