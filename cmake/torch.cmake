# The PyTorch a Python interpreter imports, for building the torch.distributed backend against it
# and nothing else (python/CMakeLists.txt).
#
# hoop_torch_from_python(<prefix>) asks ${Python3_EXECUTABLE} to import torch and reports, from
# the libraries that import loaded (/proc/self/maps, so Debian's /usr/lib/x86_64-linux-gnu and a
# wheel's torch/lib alike): <prefix>_FOUND, _VERSION, _LIB (their folder), _CMAKE (the folder
# holding Torch/TorchConfig.cmake). It then names that torch's libraries in the cache
# (TORCH_LIBRARY, c10_LIBRARY, C10_CUDA_LIBRARY, HOOP_TORCH_PYTHON), where Torch's package would
# otherwise search the system's folders first; asked at every configure, so a new HOOP_PYTHON
# replaces an earlier torch's entries.
#
# hoop_torch_check_libraries(<libraries> <lib folder> <version>) stops the configure, naming the
# strays, when a torch or c10 library comes from elsewhere than that folder: a mixed build
# crashes at import or at the first collective, so it must never be built.
function(hoop_torch_from_python prefix)
  set(${prefix}_FOUND FALSE PARENT_SCOPE)
  set(probe [=[
import os, torch
seen = {}
for line in open('/proc/self/maps'):
    parts = line.split()
    if len(parts) < 6:
        continue
    name = os.path.basename(parts[-1])
    for lib in ('libtorch.so', 'libtorch_cpu.so', 'libc10.so', 'libtorch_python.so'):
        if name == lib or name.startswith(lib + '.'):
            seen.setdefault(lib, parts[-1])
lib = os.path.dirname(seen.get('libtorch.so', seen.get('libtorch_cpu.so', '')))
print(torch.__version__)
print(lib)
print(torch.utils.cmake_prefix_path)
print(seen.get('libtorch_python.so', ''))
]=])
  execute_process(COMMAND ${Python3_EXECUTABLE} -c "${probe}" OUTPUT_VARIABLE text ERROR_VARIABLE why
                  OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    return()
  endif()
  string(REPLACE "\n" ";" lines "${text}")
  list(GET lines 0 version)
  list(GET lines 1 lib)
  list(GET lines 2 wheel_cmake)
  list(GET lines 3 loaded_python)
  if(NOT IS_DIRECTORY "${lib}")
    message(FATAL_ERROR "hoop: ${Python3_EXECUTABLE} imports PyTorch ${version}, but no libtorch was loaded by it")
  endif()
  set(cmake "")
  foreach(dir ${wheel_cmake} ${lib}/cmake)
    if(EXISTS ${dir}/Torch/TorchConfig.cmake)
      set(cmake ${dir})
      break()
    endif()
  endforeach()
  if(NOT cmake)
    message(STATUS "hoop: PyTorch ${version} of ${Python3_EXECUTABLE} has no CMake package (Torch/TorchConfig.cmake "
                   "under ${wheel_cmake} or ${lib}/cmake; Debian's is in libtorch-dev)")
    return()
  endif()
  # The link names (libtorch.so, from a wheel or libtorch-dev) in the folder the import used.
  foreach(pair "TORCH_LIBRARY;torch" "c10_LIBRARY;c10" "C10_CUDA_LIBRARY;c10_cuda" "HOOP_TORCH_PYTHON;torch_python")
    list(GET pair 0 var)
    list(GET pair 1 name)
    if(EXISTS ${lib}/lib${name}.so)
      set(${var} ${lib}/lib${name}.so CACHE FILEPATH "PyTorch's lib${name} (from HOOP_PYTHON's torch)" FORCE)
    else()
      unset(${var} CACHE)
    endif()
  endforeach()
  if(NOT EXISTS ${lib}/libtorch_python.so AND loaded_python)
    set(HOOP_TORCH_PYTHON ${loaded_python} CACHE FILEPATH "PyTorch's libtorch_python (from HOOP_PYTHON's torch)" FORCE)
  endif()
  set(${prefix}_FOUND TRUE PARENT_SCOPE)
  set(${prefix}_VERSION ${version} PARENT_SCOPE)
  set(${prefix}_LIB ${lib} PARENT_SCOPE)
  set(${prefix}_CMAKE ${cmake} PARENT_SCOPE)
endfunction()

function(hoop_torch_check_libraries libraries lib version)
  set(strays "")
  foreach(l ${libraries})
    get_filename_component(name "${l}" NAME)
    if(IS_ABSOLUTE "${l}" AND name MATCHES "^lib(torch|c10)" AND NOT l MATCHES "^${lib}/")
      list(APPEND strays ${l})
    endif()
  endforeach()
  if(strays)
    string(REPLACE ";" ", " strays "${strays}")
    message(FATAL_ERROR "hoop: the torch.distributed backend would link PyTorch ${version} from ${lib} with "
                        "libraries of another PyTorch: ${strays}. Give HOOP_PYTHON the interpreter whose torch "
                        "to build for, and remove CMAKE_PREFIX_PATH or Torch_DIR entries that name another")
  endif()
endfunction()
