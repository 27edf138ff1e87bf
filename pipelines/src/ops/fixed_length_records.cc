#include "ops/fixed_length_records.h"

#include <fmt/format.h>

#include <stdexcept>
#include <vector>

#include "formats/tfrecord.h"
#include "ops/file_source.h"
#include "ops/stage_reader.h"
#include "pipeprof/pipelines/registry.h"

namespace pipeprof::pipelines {
namespace ops {
namespace {

class FixedLengthRecordsIterator final : public Iterator {
 public:
  FixedLengthRecordsIterator(const IteratorContext& ctx, const FixedLengthRecordsNode& node)
      : Iterator(ctx, &node), node_(node), accounting_(stats(), stage_name()) {}

 protected:
  std::optional<Element> next_impl() override {
    return as_input_data_error(stage_name(), [&] { return read_next(); });
  }

 private:
  std::optional<Element> read_next() {
    const auto record_bytes = static_cast<size_t>(node_.options.record_bytes);
    while (true) {
      if (!stream_) {
        if (next_file_ >= node_.files.size()) return std::nullopt;
        open(node_.files[next_file_++]);
      }
      if (left_ > 0) {
        --left_;
        const uint64_t offset = stream_->position();
        io::SharedBytes bytes = stream_->read_shared(record_bytes);
        if (bytes.size < record_bytes) {  // the file shrank while it was read
          throw formats::FormatError(fmt::format(
              "{}: record at byte {}: truncated ({} of {} bytes)", stream_->name(), offset,
              bytes.size, record_bytes));
        }
        Tensor out = Tensor::wrap(DType::kUInt8, {node_.options.record_bytes}, std::move(bytes.data));
        out.set_origin(file_, offset);
        return Element{std::move(out)};
      }
      stream_.reset();  // the footer is never read
    }
  }

  void open(const std::string& file) {
    file_ = std::make_shared<const std::string>(file);
    stream_ = open_source_file(file, io::Compression::kNone, node_.options.read, accounting_, storage());
    const uint64_t size = *stream_->remaining();
    const auto header = static_cast<uint64_t>(node_.options.header_bytes);
    const auto footer = static_cast<uint64_t>(node_.options.footer_bytes);
    const auto record = static_cast<uint64_t>(node_.options.record_bytes);
    if (size < header + footer) {
      throw formats::FormatError(fmt::format(
          "{}: {} bytes, fewer than the header ({}) and footer ({}) bytes", file, size, header,
          footer));
    }
    const uint64_t body = size - header - footer;
    if (body % record != 0) {
      throw formats::FormatError(fmt::format(
          "{}: truncated record at byte {}: {} of {} bytes before the {}-byte footer", file,
          header + body / record * record, body % record, record, footer));
    }
    left_ = body / record;
    std::vector<std::byte> skip(static_cast<size_t>(std::min<uint64_t>(header, 1 << 20)));
    for (uint64_t done = 0; done < header;) {
      const size_t want = static_cast<size_t>(std::min<uint64_t>(header - done, skip.size()));
      const size_t n = stream_->read(std::span(skip.data(), want));
      if (n < want) {
        throw formats::FormatError(
            fmt::format("{}: truncated header at byte {}", file, done + n));
      }
      done += n;
    }
  }

  const FixedLengthRecordsNode& node_;
  ReadAccounting accounting_;
  std::unique_ptr<io::ByteStream> stream_;
  std::shared_ptr<const std::string> file_;  // the file stream_ reads (the records' origin)
  uint64_t left_ = 0;
  size_t next_file_ = 0;
};

}  // namespace

FixedLengthRecordsNode::FixedLengthRecordsNode(std::vector<std::string> files_,
                                               FixedLengthRecordOptions options_)
    : files(std::move(files_)), options(options_) {
  if (files.empty()) throw std::invalid_argument("fixed_length_records: no files");
  if (options.record_bytes < 1 || options.record_bytes > kMaxFixedRecordBytes) {
    throw std::invalid_argument("fixed_length_records: record_bytes must be in [1, " +
                                std::to_string(kMaxFixedRecordBytes) + "]");
  }
  if (options.header_bytes < 0 || options.footer_bytes < 0) {
    throw std::invalid_argument(
        "fixed_length_records: header_bytes and footer_bytes must not be negative");
  }
  check_read_options("fixed_length_records", options.read);
}

nlohmann::json FixedLengthRecordsNode::params() const {
  nlohmann::json out{{"files", files},
                     {"record_bytes", options.record_bytes},
                     {"header_bytes", options.header_bytes},
                     {"footer_bytes", options.footer_bytes}};
  add_read_params(out, options.read);
  return out;
}

std::unique_ptr<Iterator> FixedLengthRecordsNode::make_iterator(const IteratorContext& ctx) const {
  return std::make_unique<FixedLengthRecordsIterator>(ctx, *this);
}

const OpRegistration& fixed_length_records_registration() {
  static const OpRegistration kOp{
      .name = "fixed_length_records",
      .kind = OpKind::kSource,
      .summary = "tf.data's FixedLengthRecordDataset: fixed-size records of files as uint8 tensors",
      .fields =
          [] {
            std::vector<FieldSpec> f{
                {.name = "files", .type = FieldType::kValue, .required = true,
                 .doc = "a path, a list of paths, or \"$element\" (a list_files element)"},
                {.name = "record_bytes", .type = FieldType::kInteger, .required = true, .min = 1,
                 .max = kMaxFixedRecordBytes},
                {.name = "header_bytes", .type = FieldType::kInteger, .fallback = 0, .min = 0},
                {.name = "footer_bytes", .type = FieldType::kInteger, .fallback = 0, .min = 0}};
            for (auto& r : read_fields())
              f.push_back(std::move(r));
            return f;
          }(),
      .build = [](const StageReader& s, const Dataset*) {
        return fixed_length_records(read_files_field(s, "files"),
                                    {.record_bytes = s.integer("record_bytes"),
                                     .header_bytes = s.integer("header_bytes"),
                                     .footer_bytes = s.integer("footer_bytes"),
                                     .read = read_options(s)});
      },
      .simulate = [](const sim::SimStage&) -> sim::NodePtr {
        throw sim::Unsupported(
            "fixed_length_records: reading files takes a time known only when it runs");
      }};
  return kOp;
}

}  // namespace ops

Dataset fixed_length_records(std::vector<std::string> files, FixedLengthRecordOptions options) {
  return Dataset(std::make_shared<ops::FixedLengthRecordsNode>(std::move(files), options));
}

}  // namespace pipeprof::pipelines
