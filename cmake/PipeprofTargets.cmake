# Build settings shared by every pipeprof target, carried by INTERFACE targets rather than global flags.

add_library(pipeprof_warnings INTERFACE)
add_library(pipeprof::warnings ALIAS pipeprof_warnings)
target_compile_options(pipeprof_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wold-style-cast -Wcast-align
  -Woverloaded-virtual -Wimplicit-fallthrough
  # Designated initializers ({.parallelism = kAutotune}) leave the other fields at their defaults.
  -Wno-missing-field-initializers)
if(PIPEPROF_WARNINGS_AS_ERRORS)
  target_compile_options(pipeprof_warnings INTERFACE -Werror)
endif()

add_library(pipeprof_options INTERFACE)
add_library(pipeprof::options ALIAS pipeprof_options)
target_link_libraries(pipeprof_options INTERFACE pipeprof_warnings)
if(PIPEPROF_SANITIZE)
  list(JOIN PIPEPROF_SANITIZE "," _pipeprof_sanitizers)
  target_compile_options(pipeprof_options INTERFACE -fsanitize=${_pipeprof_sanitizers} -fno-omit-frame-pointer
                                                    -fno-sanitize-recover=all)
  target_link_options(pipeprof_options INTERFACE -fsanitize=${_pipeprof_sanitizers})
endif()

# Precompiled headers: the standard and third-party headers most files include (nlohmann/json and
# fmt above all, whose parsing is a third to a half of a file's front-end time), compiled once per
# build in one of two hosts and reused by every target: pipeprof_pch for libraries and programs,
# pipeprof_test_pch (GoogleTest and GoogleMock too) for the tests. Call pipeprof_define_pch() once
# the packages are found. A host has the flags of the targets that reuse it (the shared options, fmt
# and GoogleTest definitions); where a target's flags would make the compiler refuse the header, it
# reads the headers as text instead, only slower. PIPEPROF_PCH=OFF builds without them, which is how
# the no-CUDA build test checks that every file includes what it uses.
option(PIPEPROF_PCH "Precompile the common standard and third-party headers" ON)
set(PIPEPROF_PCH_HEADERS
  <algorithm> <atomic> <chrono> <condition_variable> <cstddef> <cstdint> <deque> <filesystem>
  <fstream> <functional> <iostream> <map> <memory> <mutex> <optional> <set> <span> <sstream>
  <stdexcept> <string> <string_view> <thread> <unordered_map> <utility> <variant> <vector>
  <fmt/format.h> <nlohmann/json.hpp>)

# Test binaries are compiled in batches of up to 8 files each (CMake's unity build): the tests'
# files share GoogleTest's and the libraries' template code, which each batch then compiles once
# (a test target builds in a third to a quarter of the time, most of all under the sanitizers).
# A test file's file-scope names must then be unique within its target. PIPEPROF_UNITY_TESTS=OFF
# compiles every file alone.
option(PIPEPROF_UNITY_TESTS "Compile each test target's files in batches (unity build)" ON)
# Libraries are batched the same way (a third to a half less compile time for them, which is most
# of a sanitizer build): a library file's file-scope names must be unique within its library too,
# so shared helpers have one home (e.g. trace/clock.h's ns_to_ms, percent_of). The no-CUDA build
# test compiles every file alone, so that a missing include still fails a build.
option(PIPEPROF_UNITY_LIBRARIES "Compile each library's files in batches (unity build)" ON)

# Test binaries carry line tables only (-g1: enough for a failure's backtrace, inlined frames
# included) in a Debug build too: a third less compile time for the files that are most of the
# build. Libraries and programs keep the build type's -g there.
set(PIPEPROF_TEST_DEBUG_INFO $<$<CONFIG:RelWithDebInfo,Debug>:-g1>)

function(pipeprof_define_pch)
  if(NOT PIPEPROF_PCH)
    return()
  endif()
  add_library(pipeprof_pch OBJECT ${PROJECT_SOURCE_DIR}/cmake/pch.cc)
  target_link_libraries(pipeprof_pch PRIVATE pipeprof::options nlohmann_json::nlohmann_json fmt::fmt)
  target_precompile_headers(pipeprof_pch PRIVATE ${PIPEPROF_PCH_HEADERS})
  if(PIPEPROF_BUILD_TESTS)
    add_library(pipeprof_test_pch OBJECT ${PROJECT_SOURCE_DIR}/cmake/pch.cc)
    target_link_libraries(pipeprof_test_pch PRIVATE pipeprof::options nlohmann_json::nlohmann_json fmt::fmt
                                                    GTest::gtest GTest::gmock)
    target_compile_options(pipeprof_test_pch PRIVATE ${PIPEPROF_TEST_DEBUG_INFO})
    target_precompile_headers(pipeprof_test_pch PRIVATE ${PIPEPROF_PCH_HEADERS} <gtest/gtest.h> <gmock/gmock.h>)
  endif()
endfunction()

# pipeprof_use_pch(<target> [TEST]): the target's C++ files start from the shared precompiled headers.
function(pipeprof_use_pch target)
  if(NOT PIPEPROF_PCH)
    return()
  endif()
  if(ARGV1 STREQUAL "TEST")
    target_precompile_headers(${target} REUSE_FROM pipeprof_test_pch)
  else()
    target_precompile_headers(${target} REUSE_FROM pipeprof_pch)
  endif()
  # The headers come in through -include: the target needs their include paths.
  target_link_libraries(${target} PRIVATE nlohmann_json::nlohmann_json fmt::fmt)
  # GCC reports its optimizer's bounds checks inside the standard library's inlined code when that
  # code comes from a precompiled header (the system-header exemption is lost), which GCC 12 gets
  # wrong on plain string concatenation. Builds without precompiled headers (PIPEPROF_PCH=OFF, as
  # the no-CUDA build test builds) keep these warnings.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(${target} PRIVATE -Wno-array-bounds -Wno-stringop-overread -Wno-stringop-overflow)
  endif()
endfunction()

# pipeprof_add_library(<module> SOURCES ... [DEPS ...]): one library per module folder, with its
# public headers under <module>/include and an alias pipeprof::<module>.
function(pipeprof_add_library module)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;PRIVATE_DEPS" ${ARGN})
  add_library(pipeprof_${module} ${ARG_SOURCES})
  add_library(pipeprof::${module} ALIAS pipeprof_${module})
  target_include_directories(pipeprof_${module}
    PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/include
    PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src)
  target_link_libraries(pipeprof_${module} PUBLIC ${ARG_DEPS} PRIVATE pipeprof::options ${ARG_PRIVATE_DEPS})
  set_target_properties(pipeprof_${module} PROPERTIES OUTPUT_NAME pipeprof_${module}
                        UNITY_BUILD ${PIPEPROF_UNITY_LIBRARIES} UNITY_BUILD_BATCH_SIZE 8)
  pipeprof_use_pch(pipeprof_${module})
endfunction()

# How CTest runs a test binary: 0 (the default), one CTest test per GoogleTest test, each its own
# process; N > 0, N CTest tests per binary (<binary>/shard<i>of<N>), each running every N-th of its
# tests in one process (GoogleTest's sharding), with five times the per-test timeout. The sanitizer
# runs shard (scripts/sanitize.sh): an instrumented test process takes a quarter of a second to
# start, most of a unit test's time there, and the tests run in one process just as the binary
# runs them by itself.
set(PIPEPROF_TEST_SHARDS 0 CACHE STRING "CTest tests per test binary (0: one per GoogleTest test)")
if(NOT PIPEPROF_TEST_SHARDS MATCHES "^[0-9]+$")
  message(FATAL_ERROR "PIPEPROF_TEST_SHARDS: expected a whole number, got '${PIPEPROF_TEST_SHARDS}'")
endif()

# pipeprof_add_test(<name> SOURCES ... DEPS ... [LABELS ...] [WHOLE_SUITES ... [SKIP_REGEX re]]):
# a GoogleTest binary registered with CTest (label `unit` unless given), one CTest test per
# GoogleTest test. A suite named in WHOLE_SUITES is one CTest test instead (named after the suite),
# all its tests in one process: for suites whose fixture starts something slow once per process
# (a server in SetUpTestSuite), which one process per test would start again for every test.
# SKIP_REGEX: output that marks such a run skipped (the fixture's message when it cannot start).
function(pipeprof_add_test name)
  if(NOT PIPEPROF_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(ARG "" "TIMEOUT;SKIP_REGEX" "SOURCES;DEPS;LABELS;WHOLE_SUITES" ${ARGN})
  if(NOT ARG_LABELS)
    set(ARG_LABELS unit)
  endif()
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 120)
  endif()
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main GTest::gmock pipeprof::options)
  # src/ for the module's private headers; cmake/testing for helpers every test may use.
  target_include_directories(${name} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src
                                             ${PROJECT_SOURCE_DIR}/cmake/testing)
  target_compile_options(${name} PRIVATE ${PIPEPROF_TEST_DEBUG_INFO})
  set_target_properties(${name} PROPERTIES UNITY_BUILD ${PIPEPROF_UNITY_TESTS} UNITY_BUILD_BATCH_SIZE 8)
  pipeprof_use_pch(${name} TEST)
  set(others)
  foreach(suite IN LISTS ARG_WHOLE_SUITES)
    add_test(NAME ${suite} COMMAND ${name} --gtest_filter=${suite}.*)
    set_tests_properties(${suite} PROPERTIES LABELS "${ARG_LABELS}" TIMEOUT ${ARG_TIMEOUT})
    if(ARG_SKIP_REGEX)
      set_tests_properties(${suite} PROPERTIES SKIP_REGULAR_EXPRESSION "${ARG_SKIP_REGEX}")
    endif()
    list(APPEND others "${suite}.*")
  endforeach()
  if(others)
    list(JOIN others ":" others)
  endif()
  if(PIPEPROF_TEST_SHARDS GREATER 0)
    # GoogleTest's own sharding: shard i of N runs every N-th of the binary's tests, one process.
    math(EXPR last "${PIPEPROF_TEST_SHARDS} - 1")
    math(EXPR shard_timeout "${ARG_TIMEOUT} * 5")
    set(filter)
    if(others)
      set(filter --gtest_filter=-${others})
    endif()
    foreach(shard RANGE ${last})
      set(test ${name}/shard${shard}of${PIPEPROF_TEST_SHARDS})
      add_test(NAME ${test} COMMAND ${name} ${filter})
      set_tests_properties(${test} PROPERTIES LABELS "${ARG_LABELS}" TIMEOUT ${shard_timeout}
        ENVIRONMENT "GTEST_TOTAL_SHARDS=${PIPEPROF_TEST_SHARDS};GTEST_SHARD_INDEX=${shard}")
    endforeach()
  else()
    if(others)
      set(others TEST_FILTER "-${others}")
    endif()
    gtest_discover_tests(${name} ${others} PROPERTIES LABELS "${ARG_LABELS}" TIMEOUT ${ARG_TIMEOUT}
                         DISCOVERY_TIMEOUT 60)
  endif()
  # pipeprof_<label>_tests builds every test binary with that label (scripts/sanitize.sh builds
  # pipeprof_unit_tests).
  foreach(label IN LISTS ARG_LABELS)
    if(NOT TARGET pipeprof_${label}_tests)
      add_custom_target(pipeprof_${label}_tests)
    endif()
    add_dependencies(pipeprof_${label}_tests ${name})
  endforeach()
endfunction()
