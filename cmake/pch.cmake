# Precompiled headers: on a 2-core machine most of a clean build is the compiler parsing the same
# standard headers (and, in the tests, Catch2's 17k-line header) in every file, three times over
# in CI (the normal, ASan and TSan trees). hoop_precompile(<kind> targets...) gives each target
# one precompiled header: kind "std" (cmake/pch/std.h) or "tests" (cmake/pch/tests.h, with
# Catch2). C++ sources only (not C, not CUDA); a source with its own compile options (the
# vectorised kernels' -m flags) keeps plain includes, since a precompiled header must be built
# with the flags of the file that uses it. HOOP_PCH=OFF turns it off (e.g. with ccache).
option(HOOP_PCH "Precompile the common headers once per target" ON)

function(hoop_precompile kind)
  if(NOT HOOP_PCH)
    return()
  endif()
  foreach(target IN LISTS ARGN)
    target_precompile_headers(${target} PRIVATE
      "$<$<COMPILE_LANGUAGE:CXX>:${PROJECT_SOURCE_DIR}/cmake/pch/${kind}.h>")
  endforeach()
endfunction()
