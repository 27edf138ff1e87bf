// The rows of a batch, written where the batch will hold them. A batch copies each element into its
// row; when its input is a deterministic parallel interleave whose inputs each yield exactly one
// element (a whole-file reader: element k of the output is then input k's), the interleave's
// workers know where element k will end up as they make it, and put it there themselves: into row
// k % batch_size of batch k / batch_size, on the core that has just read it, in parallel. The batch
// then finds its rows filled and copies nothing. A reader that knows the row before it reads (an
// npz file of the same layout as the last one) reads the values straight into it.
//
// Batch `b`'s tensors are made by whichever side needs them first, for the layout (component dtypes
// and shapes) of the element that asked; an element of another layout is left where it is and the
// batch copies it (or reports the mismatch, as it would without this). The batch lets go of batch
// `b` (release) before it hands the batch on, so the batch's buffer is then its own.
//
// Why a row is never overwritten: the interleave places only the one element of each input, in
// input order, so element k's row is written by k's producer alone before k is handed over, and
// the batch writes a row only for the element it is consuming. Should an input yield no element,
// later elements arrive one row early and are copied into rows whose elements were already
// consumed; an input that yields two is an error (interleave).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "pipeprof/pipelines/tensor.h"

namespace pipeprof::pipelines::ops {

class BatchRows {
 public:
  // Elements of fewer bytes than this are copied by the batch (a row is not worth a lock).
  static constexpr size_t kMinPlacedBytes = size_t{16} << 10;

  explicit BatchRows(int64_t batch_size) : batch_size_(batch_size) {}
  int64_t batch_size() const { return batch_size_; }

  // One row of one batch: a view per component, and where its bytes are (writable: nobody else
  // writes them).
  struct Row {
    Element views;
    std::vector<std::byte*> bytes;
  };

  // A component's dtype and shape: the layout of an element, without its values.
  struct Part {
    DType dtype;
    std::span<const int64_t> shape;
  };

  // The row of element `ordinal` for an element of `layout`; nullopt when its batch was made for
  // another layout, or the element is too small to place.
  std::optional<Row> row(int64_t ordinal, std::span<const Part> layout);

  // Puts element `ordinal` in its row: copies each component there (unless it is a view of that
  // row already) and makes `e` views of the row, keeping each tensor's origin. False, with `e`
  // unchanged, where row() gives none.
  bool place(int64_t ordinal, Element& e);

  // A batch's tensors ([batch_size, ...] per component) and their first bytes.
  struct Batch {
    Element tensors;
    std::vector<std::byte*> bases;
  };
  // For the batch: batch `b`'s tensors, made for `first`'s layout if no row was placed yet;
  // nullopt when they were made for another layout, `first` is too small to place, or after
  // stop().
  std::optional<Batch> batch(int64_t b, const Element& first);

  // The batch is done with batch `b` (complete, or abandoned).
  void release(int64_t b);
  // No row is given out any more, and the batches not released are let go (the elements placed
  // in them keep their rows).
  void stop();

  // Batches made and not released (a test's view).
  size_t pending() const;

 private:
  // Batch `b` of `layout` (made if absent), copied out under the lock.
  std::optional<Batch> get(int64_t b, std::span<const Part> layout);

  const int64_t batch_size_;
  mutable std::mutex mutex_;
  std::map<int64_t, Batch> pending_;
  bool stopped_ = false;
};

// The row of the element a worker is pulling, for the reader that makes it (set by the
// interleave around a placed input's first pull, on that thread): a reader that can read its
// values straight into memory it is given asks here (BatchRows::row). Scopes nest.
class RowScope {
 public:
  RowScope(BatchRows* rows, int64_t ordinal);
  ~RowScope();
  RowScope(const RowScope&) = delete;
  RowScope& operator=(const RowScope&) = delete;

  // The row for an element of one component, of `dtype` and `shape`, on this thread; nullopt
  // outside a scope, or where the row has another layout.
  static std::optional<BatchRows::Row> row(DType dtype, std::span<const int64_t> shape);
  // Whether this thread is in a scope.
  static bool active();

 private:
  BatchRows* const saved_rows_;
  const int64_t saved_ordinal_;
};

}  // namespace pipeprof::pipelines::ops
