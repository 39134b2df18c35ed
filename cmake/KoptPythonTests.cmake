# kopt_python_tests(PYTHON SOURCE_DIR): the Python worker's tests under ctest.
#
# Always registered, so a Python that is missing or cannot import torch is a
# failing test with its reason, never a silent absence:
# - python_cpu.<file>: one entry per python/tests/test_*.py except test_gpu.py
#   (label cpu);
# - python_gpu.<test>: one entry per test function of test_gpu.py (label gpu),
#   reported *skipped* (exit 77) when it skips itself for want of a device.
# tests/pytest_ctest.py runs each and says why one could not run.
function(kopt_python_tests python source_dir)
  set(tests_dir ${source_dir}/python/tests)
  set(runner ${source_dir}/tests/pytest_ctest.py)
  file(GLOB test_files CONFIGURE_DEPENDS ${tests_dir}/test_*.py)
  # KOPT_BINARY: this build's kopt (test_export.py runs `kopt export`).
  set(env "PYTHONPATH=${source_dir}/python;KOPT_BINARY=$<TARGET_FILE:kopt>")

  if(NOT python OR NOT EXISTS "${python}")
    set(why "no Python interpreter for the Python tests (KOPT_TEST_PYTHON='${python}'): install python3 \
with python3-torch (scripts/setup), or configure with -DKOPT_TEST_PYTHON=/path/to/python")
    add_test(NAME python_tests_interpreter COMMAND sh -c "echo \"kopt: $1\" >&2; exit 1" sh "${why}")
    set_tests_properties(python_tests_interpreter PROPERTIES LABELS cpu)
    return()
  endif()

  foreach(file ${test_files})
    get_filename_component(stem ${file} NAME_WE)
    if(stem STREQUAL "test_gpu")
      # One entry per test function, so each shows as run or skipped.
      file(STRINGS ${file} defs REGEX "^def test_[A-Za-z0-9_]+\\(")
      foreach(def ${defs})
        string(REGEX REPLACE "^def (test_[A-Za-z0-9_]+)\\(.*" "\\1" name "${def}")
        add_test(NAME python_gpu.${name}
          COMMAND ${python} ${runner} --skip-code 77 ${file}::${name}
          WORKING_DIRECTORY ${source_dir})
        set_tests_properties(python_gpu.${name} PROPERTIES
          LABELS gpu SKIP_RETURN_CODE 77 ENVIRONMENT "${env}" TIMEOUT 600)
      endforeach()
    else()
      add_test(NAME python_cpu.${stem} COMMAND ${python} ${runner} ${file} WORKING_DIRECTORY ${source_dir})
      set_tests_properties(python_cpu.${stem} PROPERTIES LABELS cpu ENVIRONMENT "${env}" TIMEOUT 600)
    endif()
  endforeach()
endfunction()
