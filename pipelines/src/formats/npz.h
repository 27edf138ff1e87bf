// numpy's .npz archives: a zip (libzip) of .npy members, stored or deflated. Each member is
// decoded as in npy.h; its values are read (or inflated) straight into the tensor when the layout
// allows, in one pass. A member's declared size is checked against the archive before anything
// is allocated: a stored member must fit in the file, a deflated one within deflate's largest
// ratio (1032:1) of its compressed size. The members' CRC-32s are checked.
#pragma once

#include "pipeprof/pipelines/formats.h"  // read_npz, npz_keys, write_npz

