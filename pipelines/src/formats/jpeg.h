// JPEG images through libturbojpeg: decoding into uint8 [height, width, channels] tensors and
// encoding them back. A decoded image's size is checked against its compressed size before the
// output is allocated (at most 1024 output bytes per input byte, or 64 MiB, whichever is more),
// and libjpeg's warnings (a truncated or damaged stream) are errors.
#pragma once

#include "pipeprof/pipelines/formats.h"  // decode_jpeg, encode_jpeg, write_jpeg

