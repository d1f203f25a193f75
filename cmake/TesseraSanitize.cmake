# TESSERA_SANITIZE=ON: AddressSanitizer + UndefinedBehaviorSanitizer (with float-cast-overflow) for everything
# Tessera builds (docs/reliability.md). Any UB report aborts (no recovery), so a test
# that trips UBSan fails.
#   cmake -S . -B build-asan -G Ninja -DTESSERA_SANITIZE=ON   (or: cmake --preset asan)
# Third-party libraries (SystemC, OpenMPI, ...) are not instrumented. Their
# process-lifetime allocations are suppressed for LeakSanitizer by
# cmake/sanitizer_defaults.cpp, which every executable gets (with the default
# ASAN/UBSAN options), so ctest, the CLI tests' child processes and manual runs all
# behave the same without any environment variables.
# float-cast-overflow is not part of -fsanitize=undefined in GCC or clang: it is added so
# that a double cast to an integer out of range (a duration in cycles, audit D1) aborts.
option(TESSERA_SANITIZE "Build with -fsanitize=address,undefined,float-cast-overflow (docs/reliability.md)" OFF)
if(TESSERA_SANITIZE)
  add_compile_options(-fsanitize=address,undefined,float-cast-overflow -fno-omit-frame-pointer
                      -fno-sanitize-recover=undefined,float-cast-overflow)
  add_link_options(-fsanitize=address,undefined,float-cast-overflow)
  message(STATUS "TESSERA_SANITIZE: ASan + UBSan on (${CMAKE_CXX_COMPILER_ID})")

  # After the whole tree is configured, give every executable the sanitizer defaults.
  function(_tessera_sanitizer_defaults dir)
    get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
    foreach(t ${targets})
      get_target_property(type ${t} TYPE)
      if(type STREQUAL "EXECUTABLE")
        target_sources(${t} PRIVATE ${CMAKE_SOURCE_DIR}/cmake/sanitizer_defaults.cpp)
      endif()
    endforeach()
    get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
    foreach(s ${subdirs})
      _tessera_sanitizer_defaults(${s})
    endforeach()
  endfunction()
  cmake_language(DEFER DIRECTORY ${CMAKE_SOURCE_DIR} CALL _tessera_sanitizer_defaults ${CMAKE_SOURCE_DIR})
endif()

# TESSERA_FUZZ=ON (clang only): libFuzzer targets for the input loaders in tests/fuzz
# (tests/fuzz/run_fuzzers.sh configures build-fuzz/ with it). All code is compiled with
# coverage instrumentation plus ASan and UBSan; UB aborts so the fuzzer records it.
option(TESSERA_FUZZ "Build the libFuzzer targets in tests/fuzz (clang only)" OFF)
if(TESSERA_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "TESSERA_FUZZ=ON needs clang (libFuzzer): -DCMAKE_CXX_COMPILER=clang++")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined,float-cast-overflow -fno-omit-frame-pointer
                      -fno-sanitize-recover=undefined,float-cast-overflow)
  add_link_options(-fsanitize=address,undefined,float-cast-overflow)
endif()
