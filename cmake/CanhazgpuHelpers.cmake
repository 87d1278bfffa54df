# Small helpers so that each folder's CMakeLists.txt lists only its sources
# and dependencies (the pattern of abseil's CMake/AbseilHelpers.cmake).

set(CANHAZGPU_WARNINGS -Wall -Wextra -Werror -Wno-missing-field-initializers)
if(CANHAZGPU_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer
                      -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()

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
function(canhazgpu_test)
  if(NOT CANHAZGPU_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(ARG "" "NAME" "SRCS;DEPS;LABELS;ENV" ${ARGN})
  add_executable(${ARG_NAME} ${ARG_SRCS})
  target_compile_options(${ARG_NAME} PRIVATE ${CANHAZGPU_WARNINGS})
  target_link_libraries(${ARG_NAME} PRIVATE ${ARG_DEPS} GTest::gmock GTest::gtest_main)
  if(NOT ARG_LABELS)
    set(ARG_LABELS unit)
  endif()
  gtest_discover_tests(${ARG_NAME} PROPERTIES LABELS "${ARG_LABELS}" ENVIRONMENT "${ARG_ENV}"
                       DISCOVERY_TIMEOUT 60)
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
