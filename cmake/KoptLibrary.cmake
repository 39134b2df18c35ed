# kopt_library(): one library per src/ folder, dependencies only leftward.
#
# The folders follow the loop (ARCHITECTURE.md §2). A library may link only
# libraries that stand to its left in KOPT_LAYERS; configuring fails otherwise,
# so nothing points upward.
set(KOPT_LAYERS core task store build run profile diagnose memory plan propose
    search loop report cli)

function(kopt_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;EXTERNAL" ${ARGN})
  list(FIND KOPT_LAYERS ${name} self_index)
  if(self_index EQUAL -1)
    message(FATAL_ERROR "kopt_library(${name}): not a layer in KOPT_LAYERS")
  endif()
  foreach(dep ${ARG_DEPS})
    list(FIND KOPT_LAYERS ${dep} dep_index)
    if(dep_index EQUAL -1 OR NOT dep_index LESS self_index)
      message(FATAL_ERROR
        "kopt_library(${name}) may not depend on '${dep}': dependencies point only leftward in ${KOPT_LAYERS}")
    endif()
  endforeach()
  add_library(kopt_${name} STATIC ${ARG_SOURCES})
  target_include_directories(kopt_${name} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  list(TRANSFORM ARG_DEPS PREPEND kopt_ OUTPUT_VARIABLE dep_targets)
  target_link_libraries(kopt_${name} PUBLIC ${dep_targets} ${ARG_EXTERNAL})
endfunction()

# kopt_test(name SOURCES ... LIBS ... [GPU]): a GoogleTest binary; GPU tests
# carry the ctest label `gpu` and skip themselves without a device.
function(kopt_test name)
  cmake_parse_arguments(ARG "GPU" "" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  list(TRANSFORM ARG_LIBS PREPEND kopt_ OUTPUT_VARIABLE lib_targets)
  target_link_libraries(${name} PRIVATE ${lib_targets} kopt_testing GTest::gtest_main)
  if(ARG_GPU)
    set(labels gpu)
  else()
    set(labels cpu)
  endif()
  gtest_discover_tests(${name}
    PROPERTIES LABELS "${labels}" SKIP_RETURN_CODE 77
               ENVIRONMENT "KOPT_ROOT=${PROJECT_SOURCE_DIR};KOPT_PYTHON=${KOPT_TEST_PYTHON}"
    DISCOVERY_TIMEOUT 60)
endfunction()
