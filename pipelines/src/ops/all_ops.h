// Every operation of the registry (registry.h), one line each: the order is the order of listings
// and error messages. Each name has `const OpRegistration& <name>_registration()` in its files.
#pragma once

#define PIPEPROF_FOR_EACH_OP(X) \
  X(range)                      \
  X(from_tensors)               \
  X(from_tensor_slices)         \
  X(from_vector)                \
  X(generator)                  \
  X(artificial)                 \
  X(list_files)                 \
  X(tfrecord)                   \
  X(fixed_length_records)       \
  X(indexed_binary)             \
  X(zip)                        \
  X(multiprocess)               \
  X(shared_store)               \
  X(npy)                        \
  X(npz)                        \
  X(hdf5)                       \
  X(jpeg)                       \
  X(png)                        \
  X(csv)                        \
  X(map)                        \
  X(interleave)                 \
  X(prefetch)                   \
  X(batch)                      \
  X(map_and_batch)              \
  X(cache)                      \
  X(shuffle)                    \
  X(repeat)                     \
  X(take)                       \
  X(skip)                       \
  X(filter)                     \
  X(shard)
