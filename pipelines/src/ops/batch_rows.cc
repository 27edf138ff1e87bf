#include "ops/batch_rows.h"

#include <algorithm>
#include <cstring>

namespace pipeprof::pipelines::ops {
namespace {

using Part = BatchRows::Part;

size_t row_layout_bytes(std::span<const Part> layout) {
  size_t n = 0;
  for (const Part& p : layout)
    n += static_cast<size_t>(num_elements(Shape(p.shape.begin(), p.shape.end()))) * dtype_size(p.dtype);
  return n;
}

// Whether `tensors` ([batch, ...] each) hold rows of `layout`.
bool same_row_layout(const Element& tensors, std::span<const Part> layout) {
  if (tensors.size() != layout.size()) return false;
  for (size_t c = 0; c < layout.size(); ++c) {
    const Shape& batch = tensors[c].shape();
    const auto row = layout[c].shape;
    if (tensors[c].dtype() != layout[c].dtype || batch.size() != row.size() + 1 ||
        !std::equal(row.begin(), row.end(), batch.begin() + 1)) {
      return false;
    }
  }
  return true;
}

std::vector<Part> row_layout_of(const Element& e) {
  std::vector<Part> out;
  out.reserve(e.size());
  for (const Tensor& t : e)
    out.push_back(Part{t.dtype(), t.shape()});
  return out;
}

thread_local BatchRows* t_rows = nullptr;
thread_local int64_t t_ordinal = -1;

}  // namespace

std::optional<BatchRows::Batch> BatchRows::get(int64_t b, std::span<const Part> layout) {
  // Small rows are the batch's to copy (and a small batch's values may live inside its Tensor,
  // where no pointer to them lasts).
  if (layout.empty() || row_layout_bytes(layout) < kMinPlacedBytes) return std::nullopt;
  std::lock_guard<std::mutex> lock(mutex_);
  if (stopped_) return std::nullopt;
  auto it = pending_.find(b);
  if (it == pending_.end()) {
    Batch made;
    for (const Part& p : layout) {
      Shape shape{batch_size_};
      shape.insert(shape.end(), p.shape.begin(), p.shape.end());
      // Not zeroed: every row is written before the batch is seen (see batch.cc).
      Tensor batch = Tensor::uninitialized(p.dtype, std::move(shape));
      made.bases.push_back(batch.mutable_data());  // its only owner yet: no copy
      made.tensors.push_back(std::move(batch));
    }
    it = pending_.emplace(b, std::move(made)).first;
  } else if (!same_row_layout(it->second.tensors, layout)) {
    return std::nullopt;
  }
  return it->second;
}

std::optional<BatchRows::Row> BatchRows::row(int64_t ordinal, std::span<const Part> layout) {
  const auto batch = get(ordinal / batch_size_, layout);
  if (!batch) return std::nullopt;
  const int64_t r = ordinal % batch_size_;
  Row out;
  for (size_t c = 0; c < layout.size(); ++c) {
    out.views.push_back(batch->tensors[c][r]);
    out.bytes.push_back(batch->bases[c] + static_cast<size_t>(r) * out.views.back().nbytes());
  }
  return out;
}

bool BatchRows::place(int64_t ordinal, Element& e) {
  const auto layout = row_layout_of(e);
  auto row = this->row(ordinal, layout);
  if (!row) return false;
  for (size_t c = 0; c < e.size(); ++c) {
    // memmove: a component may view a part of its own row
    if (e[c].data() != row->bytes[c]) std::memmove(row->bytes[c], e[c].data(), e[c].nbytes());
    row->views[c].copy_origin_from(e[c]);
    e[c] = std::move(row->views[c]);
  }
  return true;
}

std::optional<BatchRows::Batch> BatchRows::batch(int64_t b, const Element& first) {
  return get(b, row_layout_of(first));
}

void BatchRows::release(int64_t b) {
  std::lock_guard<std::mutex> lock(mutex_);
  pending_.erase(b);
}

void BatchRows::stop() {
  std::lock_guard<std::mutex> lock(mutex_);
  stopped_ = true;
  pending_.clear();
}

size_t BatchRows::pending() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return pending_.size();
}

RowScope::RowScope(BatchRows* rows, int64_t ordinal) : saved_rows_(t_rows), saved_ordinal_(t_ordinal) {
  t_rows = rows;
  t_ordinal = ordinal;
}

RowScope::~RowScope() {
  t_rows = saved_rows_;
  t_ordinal = saved_ordinal_;
}

bool RowScope::active() { return t_rows != nullptr; }

std::optional<BatchRows::Row> RowScope::row(DType dtype, std::span<const int64_t> shape) {
  if (t_rows == nullptr) return std::nullopt;
  const Part part{dtype, shape};
  return t_rows->row(t_ordinal, std::span<const Part>(&part, 1));
}

}  // namespace pipeprof::pipelines::ops
