#include "pipeprof/trace/spool.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <iterator>

#include "pipeprof/trace/chrome_json.h"
#include "pipeprof_testing/temp_dir.h"

namespace pipeprof::trace {
namespace {

std::string bytes_of(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void write_bytes(const std::filesystem::path& p, std::string_view b) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(b.data(), static_cast<std::streamsize>(b.size()));
}

TEST(Spool, WhatTheWriterFlushedIsReadAsItGrows) {
  testing_support::TempDir dir;
  const auto path = dir.path() / "w.spool";
  SpoolWriter w(path, "DataLoader worker 3");
  SpoolReader r(path);
  Trace t;
  EXPECT_EQ(r.read_into(t), 0u);  // only the header and the process's name so far
  EXPECT_EQ(r.pid(), ::getpid());

  const uint32_t fetch = w.name("fetch"), cat = w.name("pipeline");
  w.thread_name(77, "worker 3");
  w.span(fetch, cat, 77, 100, 250);
  w.instant(w.name("worker started"), cat, 77, 90);
  EXPECT_EQ(r.read_into(t), 0u);  // still in the writer's buffer
  w.flush();
  EXPECT_EQ(r.read_into(t), 2u);
  w.span(fetch, cat, 77, 300, 420);
  w.flush();
  EXPECT_EQ(r.read_into(t), 1u);  // only what is new
  EXPECT_EQ(r.read_into(t), 0u);

  t.finalize();
  ASSERT_EQ(t.processes.size(), 1u);
  EXPECT_EQ(t.processes[0].name, "DataLoader worker 3");
  EXPECT_EQ(t.processes[0].pid, ::getpid());
  ASSERT_EQ(t.lanes.size(), 1u);
  EXPECT_EQ(t.lanes[0].name, "worker 3");
  ASSERT_EQ(t.lanes[0].spans.size(), 2u);
  EXPECT_EQ(t.name(t.lanes[0].spans[1]), "fetch");
  EXPECT_EQ(t.lanes[0].spans[1].start_ns, 300);
  EXPECT_EQ(t.lanes[0].spans[1].dur_ns, 120);
  EXPECT_EQ(t.category(t.lanes[0].spans[0]), "pipeline");
  ASSERT_EQ(t.lanes[0].instants.size(), 1u);
  EXPECT_EQ(t.strings.str(t.lanes[0].instants[0].name), "worker started");
}

TEST(Spool, ARecordCutByTheWriterIsReadWhenItIsWhole) {
  testing_support::TempDir dir;
  const auto full = dir.path() / "full.spool";
  {
    SpoolWriter w(full, "p");
    const uint32_t n = w.name("x");
    for (int i = 0; i < 5; ++i)
      w.span(n, n, 1, i * 10, i * 10 + 5);
  }
  const std::string bytes = bytes_of(full);
  const auto cut = dir.path() / "cut.spool";
  // Every cut point: what is read in two parts is what is read at once.
  for (size_t at = 1; at < bytes.size(); at += 3) {
    write_bytes(cut, bytes.substr(0, at));
    SpoolReader r(cut);
    Trace t;
    size_t events = r.read_into(t);
    write_bytes(cut, bytes);
    events += r.read_into(t);
    EXPECT_EQ(events, 5u) << "cut at byte " << at;
  }
}

TEST(Spool, MalformedFilesNameTheFileAndTheByte) {
  testing_support::TempDir dir;
  const auto path = dir.path() / "bad.spool";
  const auto expect_error = [&](std::string_view bytes, const std::string& text, uint64_t offset) {
    write_bytes(path, bytes);
    SpoolReader r(path);
    Trace t;
    try {
      r.read_into(t);
      ADD_FAILURE() << "no error for " << text;
    } catch (const TraceFormatError& e) {
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << e.what();
      EXPECT_EQ(e.offset(), offset) << e.what();
    }
  };
  expect_error("NOTASPOOLFILE!!!", "not a pipeprof spool file", 0);
  std::string header("PPSPOOL1");
  const int64_t pid = 42;
  header.append(reinterpret_cast<const char*>(&pid), sizeof pid);
  expect_error(header + "\x09", "unknown record tag 9", 16);
  std::string span = header + "\x02";
  const uint32_t undefined = 7;
  span.append(reinterpret_cast<const char*>(&undefined), 4);
  span.append(reinterpret_cast<const char*>(&undefined), 4);
  span.append(std::string(24, '\0'));
  expect_error(span, "name id 7 used before it was defined", 16);
  // A missing file is nothing yet.
  SpoolReader missing(dir.path() / "none.spool");
  Trace t;
  EXPECT_EQ(missing.read_into(t), 0u);
}

TEST(Spool, AWriterThatCannotCreateItsFileSaysWhich) {
  EXPECT_THROW(
      {
        try {
          SpoolWriter w("/nonexistent-folder/w.spool", "p");
        } catch (const std::runtime_error& e) {
          EXPECT_NE(std::string(e.what()).find("/nonexistent-folder/w.spool"), std::string::npos);
          throw;
        }
      },
      std::runtime_error);
}

}  // namespace
}  // namespace pipeprof::trace
