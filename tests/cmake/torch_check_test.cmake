# cmake/torch.cmake's guard, run as a script (cmake -P): a torch or c10 library from another
# PyTorch's folder stops the configure naming it; one torch's own libraries, imported targets and
# other libraries (CUDA's) pass. The two cases run as child cmake processes, since a FATAL_ERROR
# ends the process that raises it.
if(DEFINED HOOP_CASE)
  include(${CMAKE_CURRENT_LIST_DIR}/../../cmake/torch.cmake)
  set(lib /venv/site-packages/torch/lib)
  if(HOOP_CASE STREQUAL "mixed")
    hoop_torch_check_libraries("torch;${lib}/libtorch.so;/usr/lib/x86_64-linux-gnu/libc10.so;/usr/local/cuda/lib64/libcudart.so"
                               ${lib} 2.15.0)
  else()
    hoop_torch_check_libraries("torch;${lib}/libtorch.so;${lib}/libc10.so;${lib}/libtorch_python.so;/usr/local/cuda/lib64/libcudart.so"
                               ${lib} 2.15.0)
  endif()
  message(STATUS "passed")
  return()
endif()
foreach(case one mixed)
  execute_process(COMMAND ${CMAKE_COMMAND} -DHOOP_CASE=${case} -P ${CMAKE_CURRENT_LIST_FILE}
                  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(case STREQUAL "one" AND NOT rc EQUAL 0)
    message(FATAL_ERROR "one torch's libraries were refused: ${err}")
  endif()
  if(case STREQUAL "mixed")
    if(rc EQUAL 0)
      message(FATAL_ERROR "a library of another PyTorch passed: ${out}")
    endif()
    string(REPLACE "\n" " " flat "${err}")
    string(REGEX REPLACE " +" " " flat "${flat}")
    if(NOT flat MATCHES "libraries of another PyTorch: /usr/lib/x86_64-linux-gnu/libc10.so\\.")
      message(FATAL_ERROR "the refusal does not name the stray library: ${err}")
    endif()
    if(flat MATCHES "libcudart")
      message(FATAL_ERROR "a library that is not torch's was named a stray: ${err}")
    endif()
  endif()
endforeach()
message(STATUS "torch_check_test: passed")
