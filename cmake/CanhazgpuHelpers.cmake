# Small helpers so that each folder's CMakeLists.txt lists only its sources
# and dependencies (the pattern of abseil's CMake/AbseilHelpers.cmake).

set(CANHAZGPU_WARNINGS -Wall -Wextra)
if(CANHAZGPU_WERROR)
  list(APPEND CANHAZGPU_WARNINGS -Werror)
endif()
list(APPEND CANHAZGPU_WARNINGS -Wno-missing-field-initializers)
# Clang checks the locking that ABSL_GUARDED_BY and friends state
# (core/mutex.h); GCC has no such analysis.
if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  list(APPEND CANHAZGPU_WARNINGS -Wthread-safety)
endif()
if(CANHAZGPU_SANITIZE OR CANHAZGPU_FUZZ)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer
                      -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()
if(CANHAZGPU_TSAN)
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
  add_link_options(-fsanitize=thread)
endif()

# Test code is compiled with these options after the build type's, so a
# preset can build it with less optimisation than the code it tests (the
# presets use -O1: a third less compile time than -O2, and tests run as
# fast). Empty: test code is built like the rest.
set(CANHAZGPU_TEST_OPTIONS "" CACHE STRING "Extra compile options for test code")

# Every unit test executable, so that a build can make only those (the ASan
# preset: CI runs the unit tests there), and the unit tests whose code starts
# threads (labelled "threads"; the TSan preset: CI runs those there).
if(CANHAZGPU_BUILD_TESTS AND NOT TARGET unit_tests)
  add_custom_target(unit_tests)
  add_custom_target(thread_tests)
endif()

# canhazgpu_test_options(target): our warnings and CANHAZGPU_TEST_OPTIONS.
function(canhazgpu_test_options target)
  target_compile_options(${target} PRIVATE ${CANHAZGPU_WARNINGS} ${CANHAZGPU_TEST_OPTIONS})
endfunction()

# canhazgpu_library(NAME store SRCS a.cc HDRS a.h DEPS canhazgpu::core)
# builds canhazgpu_<NAME>, aliased canhazgpu::<NAME>.
function(canhazgpu_library)
  cmake_parse_arguments(ARG "" "NAME" "SRCS;DEPS" ${ARGN})
  set(target canhazgpu_${ARG_NAME})
  add_library(${target} STATIC ${ARG_SRCS})
  add_library(canhazgpu::${ARG_NAME} ALIAS ${target})
  target_include_directories(${target} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_compile_options(${target} PRIVATE ${CANHAZGPU_WARNINGS})
  target_link_libraries(${target} PUBLIC ${ARG_DEPS})
endfunction()

# canhazgpu_test(NAME store_test SRCS a_test.cc DEPS canhazgpu::store LABELS unit)
# THREADS: the code under test starts threads; also run under ThreadSanitizer.
function(canhazgpu_test)
  if(NOT CANHAZGPU_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(ARG "THREADS" "NAME" "SRCS;DEPS;LABELS;ENV" ${ARGN})
  add_executable(${ARG_NAME} ${ARG_SRCS})
  canhazgpu_test_options(${ARG_NAME})
  target_link_libraries(${ARG_NAME} PRIVATE ${ARG_DEPS} GTest::gmock GTest::gtest_main)
  if(NOT ARG_LABELS)
    set(ARG_LABELS unit)
  endif()
  if("unit" IN_LIST ARG_LABELS)
    add_dependencies(unit_tests ${ARG_NAME})
  endif()
  if(ARG_THREADS)
    # One label: CMake 3.25's test discovery splits a list of labels into
    # properties. `ctest -L` takes a regular expression, so `-L unit` and
    # `-L threads` both select "unit-threads".
    list(TRANSFORM ARG_LABELS REPLACE "^unit$" "unit-threads")
    add_dependencies(thread_tests ${ARG_NAME})
  endif()
  gtest_discover_tests(${ARG_NAME} PROPERTIES LABELS "${ARG_LABELS}" ENVIRONMENT "${ARG_ENV}"
                       DISCOVERY_TIMEOUT 60)
  # The whole executable as one test, in one process: at -O0 under ASan a
  # test executable takes 0.1-0.5 s to start, and one process per test
  # (what discovery registers) spent minutes of CI's ASan stage starting
  # ~1,800 of them (ADR 0012).
  # Label "suite"; a THREADS executable also "suite-threads" (CI's TSan
  # stage, where only those are built).
  if(CANHAZGPU_UNIT_SUITES AND ARG_LABELS MATCHES "^unit")
    set(suite_labels suite)
    if(ARG_THREADS)
      list(APPEND suite_labels suite-threads)
    endif()
    add_test(NAME ${ARG_NAME} COMMAND ${ARG_NAME} --gtest_brief=1)
    set_tests_properties(${ARG_NAME} PROPERTIES LABELS "${suite_labels}" ENVIRONMENT "${ARG_ENV}"
                                                TIMEOUT 1200)
  endif()
endfunction()

# canhazgpu_benchmark(NAME allocator_benchmark SRCS a_benchmark.cc DEPS ...)
function(canhazgpu_benchmark)
  if(NOT CANHAZGPU_BUILD_BENCHMARKS)
    return()
  endif()
  cmake_parse_arguments(ARG "" "NAME" "SRCS;DEPS" ${ARGN})
  add_executable(${ARG_NAME} ${ARG_SRCS})
  target_compile_options(${ARG_NAME} PRIVATE ${CANHAZGPU_WARNINGS})
  target_link_libraries(${ARG_NAME} PRIVATE ${ARG_DEPS} benchmark::benchmark)
endfunction()

# Every canhazgpu command is a short-lived process, so start-up is most of its
# cost, and loading Debian's ~30 shared Abseil libraries was half of it
# (docs/perf.md). Point the imported absl:: targets at Debian's static (PIC)
# archives instead, when they are installed.
function(canhazgpu_use_static_absl)
  get_directory_property(imported IMPORTED_TARGETS)
  foreach(target IN LISTS imported)
    if(NOT target MATCHES "^absl::")
      continue()
    endif()
    get_target_property(location ${target} IMPORTED_LOCATION_NONE)
    if(NOT location MATCHES "\\.so")
      continue()
    endif()
    string(REGEX REPLACE "\\.so[.0-9]*$" ".a" archive "${location}")
    if(EXISTS "${archive}")
      set_target_properties(${target} PROPERTIES IMPORTED_LOCATION_NONE "${archive}"
                            IMPORTED_SONAME_NONE "")
    endif()
  endforeach()
endfunction()

# Same reason: link SQLite from Debian's archive (libsqlite3-dev ships it)
# instead of resolving ~300 symbols of libsqlite3.so in every command.
function(canhazgpu_use_static_sqlite3)
  find_library(sqlite3_archive NAMES libsqlite3.a HINTS ${SQLITE3_LIBRARY_DIRS})
  if(sqlite3_archive)
    set_target_properties(PkgConfig::SQLITE3 PROPERTIES INTERFACE_LINK_LIBRARIES
                          "${sqlite3_archive};m;dl;pthread")
  endif()
endfunction()

# RE2 (CEL's matches()) likewise, from libre2-dev's archive.
function(canhazgpu_use_static_re2)
  find_library(re2_archive NAMES libre2.a HINTS ${RE2_LIBRARY_DIRS})
  if(re2_archive)
    set_target_properties(PkgConfig::RE2 PROPERTIES INTERFACE_LINK_LIBRARIES "${re2_archive};pthread")
  endif()
endfunction()

# The binaries users run: with libstdc++ and libgcc linked in, the dynamic
# loader only maps libc and libm (docs/perf.md: start-up 1.5 -> 0.6 ms).
function(canhazgpu_static_runtime target)
  if(CANHAZGPU_SANITIZE OR CANHAZGPU_FUZZ OR CANHAZGPU_TSAN)
    return()  # the sanitizer runtimes expect the shared libstdc++
  endif()
  target_link_options(${target} PRIVATE -static-libstdc++ -static-libgcc)
endfunction()

# canhazgpu_fuzzer(NAME cel_fuzzer SRCS cel_fuzzer.cc DEPS canhazgpu::cel SEEDS testdata/fuzz/cel)
# builds a libFuzzer target (the "fuzz" preset: clang with CANHAZGPU_FUZZ=ON)
# and a ctest labelled "fuzz" that runs it from the seed corpus in the tree for
# FUZZ_SECONDS (scripts/run_fuzzer.sh). New inputs go to a scratch corpus, so a
# run never edits the tree; crashes are kept under build-fuzz/fuzz-artifacts/.
function(canhazgpu_fuzzer)
  if(NOT CANHAZGPU_FUZZ)
    return()
  endif()
  cmake_parse_arguments(ARG "" "NAME;SEEDS" "SRCS;DEPS" ${ARGN})
  add_executable(${ARG_NAME} ${ARG_SRCS})
  target_compile_options(${ARG_NAME} PRIVATE ${CANHAZGPU_WARNINGS})
  target_link_libraries(${ARG_NAME} PRIVATE ${ARG_DEPS})
  target_link_options(${ARG_NAME} PRIVATE -fsanitize=fuzzer)
  add_dependencies(fuzzers ${ARG_NAME})
  add_test(NAME ${ARG_NAME}
           COMMAND ${PROJECT_SOURCE_DIR}/scripts/run_fuzzer.sh $<TARGET_FILE:${ARG_NAME}>
                   ${CMAKE_CURRENT_SOURCE_DIR}/${ARG_SEEDS} ${PROJECT_BINARY_DIR}/fuzz-artifacts)
  set_tests_properties(${ARG_NAME} PROPERTIES LABELS fuzz)
endfunction()

# canhazgpu_program_docs(PROGRAM COMPONENT C [ALIASES A...]): the man page
# and the bash and zsh completions, written by PROGRAM itself from its command
# table (`PROGRAM manpage`, `PROGRAM completion bash|zsh`) so that they cannot
# go stale, built by the target PROGRAM_docs and installed with component C
# under share/ (where Debian's bash-completion and zsh look). An alias gets
# the same completion under its own name: bash-completion loads by the name
# typed.
function(canhazgpu_program_docs program)
  cmake_parse_arguments(ARG "" "COMPONENT" "ALIASES" ${ARGN})
  set(dir ${CMAKE_CURRENT_BINARY_DIR})
  add_custom_command(
    OUTPUT ${dir}/${program}.1 ${dir}/${program}.bash ${dir}/_${program}
    COMMAND ${program} manpage > ${dir}/${program}.1
    COMMAND ${program} completion bash > ${dir}/${program}.bash
    COMMAND ${program} completion zsh > ${dir}/_${program}
    DEPENDS ${program}
    COMMENT "Generating the ${program} man page and shell completions")
  add_custom_target(${program}_docs ALL DEPENDS ${dir}/${program}.1 ${dir}/${program}.bash ${dir}/_${program})
  install(FILES ${dir}/${program}.1 DESTINATION share/man/man1 COMPONENT ${ARG_COMPONENT})
  install(FILES ${dir}/${program}.bash DESTINATION share/bash-completion/completions
          RENAME ${program} COMPONENT ${ARG_COMPONENT})
  foreach(alias IN LISTS ARG_ALIASES)
    install(FILES ${dir}/${program}.bash DESTINATION share/bash-completion/completions
            RENAME ${alias} COMPONENT ${ARG_COMPONENT})
  endforeach()
  install(FILES ${dir}/_${program} DESTINATION share/zsh/vendor-completions COMPONENT ${ARG_COMPONENT})
endfunction()

# The targets defined in `dir` and the directories below it.
function(canhazgpu_targets_below dir out)
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(sub IN LISTS subdirs)
    canhazgpu_targets_below(${sub} below)
    list(APPEND targets ${below})
  endforeach()
  set(${out} ${targets} PARENT_SCOPE)
endfunction()

# canhazgpu_all_but_unit_tests(NAME): a target that builds what `all` builds
# except the executables of unit_tests (and thread_tests, which are among
# them). Call it last, once every target exists.
function(canhazgpu_all_but_unit_tests name)
  canhazgpu_targets_below(${PROJECT_SOURCE_DIR} targets)
  get_target_property(unit unit_tests MANUALLY_ADDED_DEPENDENCIES)
  add_custom_target(${name})
  foreach(t IN LISTS targets)
    get_target_property(type ${t} TYPE)
    get_target_property(excluded ${t} EXCLUDE_FROM_ALL)
    if(type STREQUAL "INTERFACE_LIBRARY" OR excluded OR t IN_LIST unit)
      continue()
    endif()
    if(t MATCHES "^(unit_tests|thread_tests|fuzzers|${name})$")
      continue()
    endif()
    add_dependencies(${name} ${t})
  endforeach()
endfunction()
