// FormatError, the error of every reader and writer here, is declared with the public API of the
// formats (pipeprof/pipelines/formats.h).
#pragma once

#include "pipeprof/pipelines/formats.h"
