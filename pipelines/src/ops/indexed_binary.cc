#include "ops/indexed_binary.h"

#include <fmt/format.h>

#include <stdexcept>

#include "formats/format_error.h"
#include "formats/indexed_binary.h"
#include "ops/file_source.h"
#include "ops/stage_reader.h"
#include "pipeprof/pipelines/registry.h"

namespace pipeprof::pipelines {
namespace ops {
namespace {

class IndexedBinaryIterator final : public Iterator {
 public:
  IndexedBinaryIterator(const IteratorContext& ctx, const IndexedBinaryNode& node)
      : Iterator(ctx, &node), node_(node), accounting_(stats(), stage_name()) {}

 protected:
  std::optional<Element> next_impl() override {
    return as_input_data_error(stage_name(), [&] { return read_next(); });
  }

 private:
  std::optional<Element> read_next() {
    while (true) {
      if (!stream_) {
        if (next_file_ >= node_.files.size()) return std::nullopt;
        open(node_.files[next_file_++]);
      }
      if (sample_ < index_.offsets.size()) {
        const uint64_t offset = index_.offsets[sample_];
        const uint64_t size = index_.sizes[sample_];
        ++sample_;
        seek(offset);
        io::SharedBytes bytes = stream_->read_shared(static_cast<size_t>(size));
        if (bytes.size < size) {  // the file shrank while it was read
          throw formats::FormatError(fmt::format("{}: sample {} at byte {}: truncated ({} of {} bytes)",
                                                 *file_, sample_ - 1, offset, bytes.size, size));
        }
        Tensor sample = Tensor::wrap(DType::kUInt8, {static_cast<int64_t>(size)}, std::move(bytes.data));
        sample.set_origin(file_, offset);
        return Element{std::move(sample)};
      }
      stream_.reset();
    }
  }

  void open(const std::string& file) {
    file_ = std::make_shared<const std::string>(file);
    stream_ = open_source_file(file, io::Compression::kNone, node_.read, accounting_, storage());
    const uint64_t size = stream_->remaining().value_or(0);
    index_ = formats::read_sample_index(file, size, storage());
    sample_ = 0;
  }

  // Moves the stream forward to `offset`, reading past the bytes between (the index is in file
  // order: read_sample_index checks it; samples DLIO generates lie back to back).
  void seek(uint64_t offset) {
    while (stream_->position() < offset) {
      const auto gap = static_cast<size_t>(std::min<uint64_t>(offset - stream_->position(), 1 << 20));
      if (stream_->read_shared(gap).size < gap) {
        throw formats::FormatError(fmt::format("{}: truncated before byte {}", *file_, offset));
      }
    }
  }

  const IndexedBinaryNode& node_;
  ReadAccounting accounting_;
  std::unique_ptr<io::ByteStream> stream_;
  std::shared_ptr<const std::string> file_;  // the file stream_ reads (the samples' origin)
  formats::SampleIndex index_;
  size_t sample_ = 0;
  size_t next_file_ = 0;
};

}  // namespace

IndexedBinaryNode::IndexedBinaryNode(std::vector<std::string> files_, FileReadOptions read_)
    : files(std::move(files_)), read(read_) {
  if (files.empty()) throw std::invalid_argument("indexed_binary: no files");
  check_read_options("indexed_binary", read);
}

nlohmann::json IndexedBinaryNode::params() const {
  nlohmann::json out{{"files", files}};
  add_read_params(out, read);
  return out;
}

std::unique_ptr<Iterator> IndexedBinaryNode::make_iterator(const IteratorContext& ctx) const {
  return std::make_unique<IndexedBinaryIterator>(ctx, *this);
}

const OpRegistration& indexed_binary_registration() {
  static const OpRegistration kOp{
      .name = "indexed_binary",
      .kind = OpKind::kSource,
      .summary = "Megatron-style indexed binary files (DLIO's indexed_binary and "
                 "mmap_indexed_binary): each sample found through <file>.off.idx and "
                 "<file>.sz.idx, as a uint8 tensor",
      .fields =
          [] {
            std::vector<FieldSpec> f{
                {.name = "files", .type = FieldType::kValue, .required = true,
                 .doc = "a path, a list of paths, or \"$element\" (a list_files element)"}};
            for (auto& r : read_fields())
              f.push_back(std::move(r));
            return f;
          }(),
      .build = [](const StageReader& s, const Dataset*) {
        return indexed_binary(read_files_field(s, "files"), read_options(s));
      },
      .simulate = [](const sim::SimStage&) -> sim::NodePtr {
        throw sim::Unsupported("indexed_binary: reading files takes a time known only when it runs");
      }};
  return kOp;
}

}  // namespace ops

Dataset indexed_binary(std::vector<std::string> files, FileReadOptions read) {
  return Dataset(std::make_shared<ops::IndexedBinaryNode>(std::move(files), read));
}

}  // namespace pipeprof::pipelines
