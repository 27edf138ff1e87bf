#include "ops/tfrecord.h"

#include <stdexcept>

#include "formats/tfrecord.h"
#include "ops/file_source.h"
#include "ops/stage_reader.h"
#include "pipeprof/pipelines/registry.h"

namespace pipeprof::pipelines {
namespace ops {
namespace {

class TFRecordIterator final : public Iterator {
 public:
  TFRecordIterator(const IteratorContext& ctx, const TFRecordNode& node)
      : Iterator(ctx, &node),
        node_(node),
        compression_(io::parse_compression(node.options.compression)),
        accounting_(stats(), stage_name()) {}

 protected:
  std::optional<Element> next_impl() override {
    return as_input_data_error(stage_name(), [&] { return read_next(); });
  }

 private:
  std::optional<Element> read_next() {
    while (true) {
      if (!reader_) {
        if (next_file_ >= node_.files.size()) return std::nullopt;
        file_ = std::make_shared<const std::string>(node_.files[next_file_]);
        reader_.emplace(open_source_file(node_.files[next_file_++], compression_,
                                         node_.options.read, accounting_, storage()),
                        node_.options.verify_crc);
      }
      if (auto record = reader_->next()) {
        const auto size = static_cast<int64_t>(record->size);
        Tensor bytes = Tensor::wrap(DType::kUInt8, {size}, std::move(record->data));
        bytes.set_origin(file_, record->offset);
        return Element{std::move(bytes)};
      }
      reader_.reset();
    }
  }

  const TFRecordNode& node_;
  io::Compression compression_;
  ReadAccounting accounting_;
  std::optional<formats::TFRecordReader> reader_;
  std::shared_ptr<const std::string> file_;  // the file reader_ reads (the records' origin)
  size_t next_file_ = 0;
};

}  // namespace

TFRecordNode::TFRecordNode(std::vector<std::string> files_, TFRecordOptions options_)
    : files(std::move(files_)), options(std::move(options_)) {
  if (files.empty()) throw std::invalid_argument("tfrecord: no files");
  io::parse_compression(options.compression);  // throws std::invalid_argument
  check_read_options("tfrecord", options.read);
}

nlohmann::json TFRecordNode::params() const {
  nlohmann::json out{{"files", files},
                     {"compression", options.compression},
                     {"verify_crc", options.verify_crc}};
  add_read_params(out, options.read);
  return out;
}

std::unique_ptr<Iterator> TFRecordNode::make_iterator(const IteratorContext& ctx) const {
  return std::make_unique<TFRecordIterator>(ctx, *this);
}

const OpRegistration& tfrecord_registration() {
  static const OpRegistration kOp{
      .name = "tfrecord",
      .kind = OpKind::kSource,
      .summary = "tf.data's TFRecordDataset: the records of TFRecord files as uint8 tensors",
      .fields =
          [] {
            std::vector<FieldSpec> f{
                {.name = "files", .type = FieldType::kValue, .required = true,
                 .doc = "a path, a list of paths, or \"$element\" (a list_files element)"},
                {.name = "compression", .type = FieldType::kString, .fallback = "none",
                 .doc = "none or gzip"},
                {.name = "verify_crc", .type = FieldType::kBoolean, .fallback = true,
                 .doc = "check both CRC32Cs of every record"}};
            for (auto& r : read_fields())
              f.push_back(std::move(r));
            return f;
          }(),
      .build = [](const StageReader& s, const Dataset*) {
        const std::string compression = s.string("compression");
        if (compression != "none" && compression != "gzip") {
          s.fail("compression", "\"none\" or \"gzip\"", s.raw("compression"));
        }
        return tfrecord(read_files_field(s, "files"),
                        {.compression = compression,
                         .verify_crc = s.boolean("verify_crc"),
                         .read = read_options(s)});
      },
      .simulate = [](const sim::SimStage&) -> sim::NodePtr {
        throw sim::Unsupported("tfrecord: reading files takes a time known only when it runs");
      }};
  return kOp;
}

}  // namespace ops

Dataset tfrecord(std::vector<std::string> files, TFRecordOptions options) {
  return Dataset(std::make_shared<ops::TFRecordNode>(std::move(files), std::move(options)));
}

}  // namespace pipeprof::pipelines
