#include "ops/list_files.h"

#include <algorithm>
#include <random>
#include <stdexcept>

#include "io/storage.h"
#include "io/filesystem.h"
#include "io/remote_cache.h"
#include "io/s3.h"
#include "ops/stage_reader.h"
#include "pipeprof/pipelines/errors.h"
#include "pipeprof/pipelines/registry.h"

namespace pipeprof::pipelines {
namespace ops {
namespace {

uint64_t mix(uint64_t x) {  // splitmix64's finalizer
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

class ListFilesIterator final : public Iterator {
 public:
  ListFilesIterator(const IteratorContext& ctx, const ListFilesNode& node, uint64_t seed)
      : Iterator(ctx, &node), node_(node), seed_(seed) {}

 protected:
  std::optional<Element> next_impl() override {
    if (!listed_) {
      if (node_.pattern.empty()) {
        list_ = &node_.files;  // an explicit list: not copied
      } else {
        try {
          matched_ = io::match_files(node_.pattern, storage().get());
        } catch (const io::IoError& e) {
          throw InputDataError(stage_name(), e.what());
        }
        if (matched_.empty()) {
          throw InputDataError(stage_name(),
                               "no file matches the pattern \"" + node_.pattern + "\"");
        }
        list_ = &matched_;
      }
      if (node_.options.shuffle) {
        order_.resize(list_->size());
        for (size_t i = 0; i < order_.size(); ++i)
          order_[i] = i;
        std::mt19937_64 rng(seed_);
        std::shuffle(order_.begin(), order_.end(), rng);
      }
      listed_ = true;  // only now: a failed listing fails again if asked again
    }
    if (next_ >= list_->size()) return std::nullopt;
    const size_t i = order_.empty() ? next_ : order_[next_];
    ++next_;
    return Element{file_name_tensor((*list_)[i])};
  }

 private:
  const ListFilesNode& node_;
  uint64_t seed_;
  bool listed_ = false;
  const std::vector<std::string>* list_ = nullptr;
  std::vector<std::string> matched_;
  std::vector<size_t> order_;  // shuffled: the order of list_'s entries
  size_t next_ = 0;
};

}  // namespace

ListFilesNode::ListFilesNode(std::string pattern_, std::vector<std::string> files_,
                             ListFilesOptions options_)
    : pattern(std::move(pattern_)),
      files(std::move(files_)),
      options(options_),
      base_seed(options_.seed ? *options_.seed : std::random_device{}()) {
  if (pattern.empty() == files.empty()) {
    throw std::invalid_argument(pattern.empty()
                                    ? "list_files: the pattern is empty"
                                    : "list_files: a pattern or a list of files, not both");
  }
  for (const std::string& f : files) {
    if (f.empty()) throw std::invalid_argument("list_files: an empty file name in the list");
  }
}

nlohmann::json ListFilesNode::params() const {
  nlohmann::json out{{"shuffle", options.shuffle}};
  if (pattern.empty()) {
    out["files"] = files;
  } else {
    out["pattern"] = pattern;
  }
  if (options.seed) out["seed"] = *options.seed;
  return out;
}

std::unique_ptr<Iterator> ListFilesNode::make_iterator(const IteratorContext& ctx) const {
  // Every epoch (iterator) its own order; the same seed gives the same sequence of orders.
  const uint64_t epoch = iterations.fetch_add(1);
  return std::make_unique<ListFilesIterator>(ctx, *this, mix(base_seed ^ mix(epoch)));
}

const OpRegistration& list_files_registration() {
  static const OpRegistration kOp{
      .name = "list_files",
      .kind = OpKind::kSource,
      .summary = "tf.data's list_files: the files matching a glob pattern (or listed) as file name "
                 "elements",
      .fields = {{.name = "pattern", .type = FieldType::kString,
                  .doc = "glob(3): *, ?, [...]; matched at the start of every epoch"},
                 {.name = "files", .type = FieldType::kValue,
                  .doc = "instead of a pattern: the files, in this order (from_tensor_slices over "
                         "names)"},
                 {.name = "shuffle", .type = FieldType::kBoolean, .fallback = true,
                  .doc = "a new order every epoch; false: sorted"},
                 {.name = "seed", .type = FieldType::kInteger, .min = 0,
                  .doc = "absent: a new order on every run"}},
      .build = [](const StageReader& s, const Dataset*) {
        ListFilesOptions options{.shuffle = s.boolean("shuffle"), .seed = std::nullopt};
        if (auto seed = s.optional_integer("seed")) options.seed = static_cast<uint64_t>(*seed);
        if (s.has("pattern") == s.has("files")) {
          throw SpecError(s.where() + ": expected exactly one of \"pattern\" or \"files\"");
        }
        if (s.has("pattern")) return list_files(s.string("pattern"), options);
        const nlohmann::json& v = s.raw("files");
        if (!v.is_array() || v.empty()) s.fail("files", "a non-empty list of file names", v);
        std::vector<std::string> files;
        for (const auto& f : v) {
          if (!f.is_string() || f.get<std::string>().empty())
            s.fail("files", "a non-empty list of file names", v);
          files.push_back(f.get<std::string>());
        }
        return list_files(std::move(files), options);
      },
      .simulate = [](const sim::SimStage&) -> sim::NodePtr {
        throw sim::Unsupported("list_files: the files are only known when the pipeline runs");
      }};
  return kOp;
}

}  // namespace ops

Dataset list_files(std::string pattern, ListFilesOptions options) {
  return Dataset(std::make_shared<ops::ListFilesNode>(std::move(pattern),
                                                      std::vector<std::string>{}, options));
}

Dataset list_files(std::vector<std::string> files, ListFilesOptions options) {
  if (files.empty()) throw std::invalid_argument("list_files: the list of files is empty");
  return Dataset(std::make_shared<ops::ListFilesNode>(std::string(), std::move(files), options));
}

std::vector<std::string> matching_files(const std::string& pattern, const StorageContext* storage) {
  try {
    return io::match_files(pattern, storage);
  } catch (const io::IoError& e) {
    throw InputDataError("list_files", e.what());
  }
}

std::vector<std::pair<std::string, uint64_t>> matching_objects(const std::string& pattern,
                                                               const StorageContext* storage) {
  try {
    if (!io::is_s3_url(pattern))
      throw io::IoError(pattern + ": objects are matched with their sizes in s3:// folders only");
    return io::match_s3_objects(pattern, io::access_of(storage));
  } catch (const io::IoError& e) {
    throw InputDataError("list_files", e.what());
  }
}

void drop_from_page_cache(const std::string& path) {
  if (!io::is_local(path)) return;
  try {
    io::drop_from_page_cache(path);
  } catch (const io::IoError& e) {
    throw InputDataError("drop_from_page_cache", e.what());
  }
}

Tensor file_name_tensor(std::string_view path) {
  Tensor t(DType::kUInt8, {static_cast<int64_t>(path.size())});
  std::copy(path.begin(), path.end(), reinterpret_cast<char*>(t.mutable_data()));
  return t;
}

std::string file_name(const Element& element, size_t component) {
  if (component >= element.size()) {
    throw std::invalid_argument("a file name element needs component " +
                                std::to_string(component) + ", the element has " +
                                std::to_string(element.size()));
  }
  const Tensor& t = element[component];
  if (t.dtype() != DType::kUInt8 || t.rank() != 1) {
    throw std::invalid_argument("component " + std::to_string(component) +
                                " is not a file name (a rank-1 uint8 tensor): " +
                                std::string(dtype_name(t.dtype())) + " " +
                                shape_string(t.shape()));
  }
  return {reinterpret_cast<const char*>(t.data()), t.nbytes()};
}

}  // namespace pipeprof::pipelines
