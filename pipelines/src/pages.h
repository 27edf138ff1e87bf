// Faulting a range of memory in with one call instead of one page fault per page (on a VM each
// fault is an exit to the hypervisor). Best effort: a kernel without MADV_POPULATE_* leaves the
// first access to fault the pages in, except where noted.
#pragma once

#include <cstddef>
#include <span>

namespace pipeprof::pipelines {

// For writing (MADV_POPULATE_WRITE); the contents are not kept. On a kernel without it a byte of
// each page is written, so the pages are in either way. Ranges under 256 KiB are left alone.
void fault_in_for_write(std::span<std::byte> bytes);

// For reading (MADV_POPULATE_READ): a file mapping's pages are read from the file now, so that the
// work that reads them next does not wait on the disk. Ranges under 256 KiB are left alone.
void fault_in_for_read(std::span<const std::byte> bytes);

}  // namespace pipeprof::pipelines
