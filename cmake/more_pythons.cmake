# The Python package and its torch.distributed backend for more interpreters than HOOP_PYTHON
# (issue 51): each of HOOP_MORE_PYTHONS gets its own build of python/ (standalone, against this
# build tree's libhoop) in BUILD/python-more/<N>, with the layout the tests expect of a build:
# python/hoop and bin/hoop-parallelize. tests/CMakeLists.txt runs the Python tests and the
# hoop-parallelize corpus under each (HOOPTEST_PYTHON_BUILD points them there).
#
# The default is pip's PyTorch 2.x in the venv scripts/torch-venv.sh makes (HOOP_TORCH_VENV, or
# /opt/hoop/torch-venv), where it exists: CI tests Debian's 1.13 (HOOP_PYTHON) and that one.
# -DHOOP_MORE_PYTHONS= (empty) builds for HOOP_PYTHON alone.
if(DEFINED ENV{HOOP_TORCH_VENV})
  set(hoop_torch_venv $ENV{HOOP_TORCH_VENV})
else()
  set(hoop_torch_venv /opt/hoop/torch-venv)
endif()
set(hoop_more_default "")
if(EXISTS ${hoop_torch_venv}/bin/python)
  set(hoop_more_default ${hoop_torch_venv}/bin/python)
endif()
set(HOOP_MORE_PYTHONS "${hoop_more_default}" CACHE STRING
    "More interpreters to build the Python package for and run its tests under (a list)")
set(HOOP_MORE_PYTHON_BUILDS "")  # the build folders, and their interpreters:
set(HOOP_MORE_PYTHONS_BUILT "")
if(NOT HOOP_PYTHON_PACKAGE)
  return()
endif()
include(ExternalProject)
set(hoop_more_index 0)
foreach(hoop_more_py IN LISTS HOOP_MORE_PYTHONS)
  if(NOT EXISTS ${hoop_more_py})  # a venv removed since the first configure, say
    message(WARNING "hoop: HOOP_MORE_PYTHONS names ${hoop_more_py}, which does not exist: skipped")
    continue()
  endif()
  math(EXPR hoop_more_index "${hoop_more_index} + 1")
  set(hoop_more_dir ${CMAKE_BINARY_DIR}/python-more/${hoop_more_index})
  # Built every time (BUILD_ALWAYS): its own build notices what changed, as the main one does.
  ExternalProject_Add(hoop_python_more_${hoop_more_index}
    SOURCE_DIR ${PROJECT_SOURCE_DIR}/python
    BINARY_DIR ${hoop_more_dir}
    PREFIX ${hoop_more_dir}/ep
    CMAKE_ARGS -DHOOP_PYTHON=${hoop_more_py} -Dhoop_DIR=${CMAKE_BINARY_DIR} -DCMAKE_BUILD_TYPE=${CMAKE_BUILD_TYPE}
               -DCMAKE_CXX_COMPILER=${CMAKE_CXX_COMPILER}
    BUILD_ALWAYS TRUE
    INSTALL_COMMAND ""
    DEPENDS hoop hoop_signals hooprun)
  list(APPEND HOOP_MORE_PYTHON_BUILDS ${hoop_more_dir})
  list(APPEND HOOP_MORE_PYTHONS_BUILT ${hoop_more_py})
  message(STATUS "hoop: the Python package for ${hoop_more_py} too, in ${hoop_more_dir}")
endforeach()
