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
  set_target_properties(pipeprof_${module} PROPERTIES OUTPUT_NAME pipeprof_${module})
endfunction()

# pipeprof_add_test(<name> SOURCES ... DEPS ... [LABELS ...]): a GoogleTest binary registered with CTest
# (label `unit` unless given).
function(pipeprof_add_test name)
  if(NOT PIPEPROF_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(ARG "" "TIMEOUT" "SOURCES;DEPS;LABELS" ${ARGN})
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
  gtest_discover_tests(${name} PROPERTIES LABELS "${ARG_LABELS}" TIMEOUT ${ARG_TIMEOUT}
                       DISCOVERY_TIMEOUT 60)
  # pipeprof_<label>_tests builds every test binary with that label (scripts/sanitize.sh builds
  # pipeprof_unit_tests).
  foreach(label IN LISTS ARG_LABELS)
    if(NOT TARGET pipeprof_${label}_tests)
      add_custom_target(pipeprof_${label}_tests)
    endif()
    add_dependencies(pipeprof_${label}_tests ${name})
  endforeach()
endfunction()
