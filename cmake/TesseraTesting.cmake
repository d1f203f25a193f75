include(GoogleTest)
# tessera_add_test(NAME SOURCES ... LIBS ...)
# gtest_discover_tests runs every case in its own process, which SystemC needs (one
# elaboration per process, no usable context reset in 2.3.x). Each case is labelled with
# its executable's name (ctest -L test_config runs one executable's cases).
function(tessera_add_test name)
  cmake_parse_arguments(T "" "" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${T_SOURCES} ${CMAKE_SOURCE_DIR}/models/common/sc_main_stub.cpp)
  target_link_libraries(${name} PRIVATE ${T_LIBS} GTest::gtest GTest::gtest_main)
  target_compile_definitions(${name} PRIVATE TESSERA_SOURCE_DIR="${CMAKE_SOURCE_DIR}"
                                             TESSERA_BINARY_DIR="${CMAKE_BINARY_DIR}")
  gtest_discover_tests(${name}
    PROPERTIES ENVIRONMENT "SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1" LABELS ${name}
    DISCOVERY_TIMEOUT 60)
endfunction()
