# INFERD_WITH_CUDA: AUTO (the default) builds the CUDA device-memory layer
# when find_package(CUDAToolkit) finds a toolkit, ON requires one, OFF never
# looks. Only src/cuda/ sees CUDA headers; the runtime is linked statically,
# so the binary starts (and reports "no CUDA device") where no driver is
# installed. No nvcc is involved: the server calls the runtime API only.
# Sets INFERD_CUDA_ENABLED.
set(INFERD_WITH_CUDA AUTO CACHE STRING "Build CUDA support: AUTO, ON or OFF")
set_property(CACHE INFERD_WITH_CUDA PROPERTY STRINGS AUTO ON OFF)
set(INFERD_CUDA_ENABLED OFF)
if(NOT INFERD_WITH_CUDA STREQUAL "OFF")
  if(INFERD_WITH_CUDA STREQUAL "ON")
    find_package(CUDAToolkit REQUIRED)
  else()
    find_package(CUDAToolkit QUIET)
  endif()
  if(CUDAToolkit_FOUND)
    set(INFERD_CUDA_ENABLED ON)
  endif()
endif()
if(INFERD_CUDA_ENABLED)
  message(STATUS "inferd: CUDA support ON (toolkit ${CUDAToolkit_VERSION} at ${CUDAToolkit_LIBRARY_ROOT})")
else()
  message(STATUS "inferd: CUDA support OFF")
endif()
