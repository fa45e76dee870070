# HIP's two platforms for sluice::hip, in one place (SLUICE_HIP_PLATFORM,
# cmake/SluiceOptions.cmake). The library, the tests and the tools are plain C++
# compiled by the host compiler on both; what differs is here:
#   SLUICE_HIP_RUNTIME      what sluice::hip links (PUBLIC): hip::host on AMD; on
#                           NVIDIA the CUDA runtime, static (libcudart_static.a: a
#                           program needs only libc and the driver where it runs)
#   SLUICE_HIP_DEFINITIONS  what sluice::hip defines for its users (PUBLIC):
#                           __HIP_PLATFORM_NVIDIA__ on NVIDIA (hip::host defines AMD's)
#   SLUICE_HIP_DEVICE_TRAP  the device code's trap: __trap on NVIDIA, __builtin_trap on AMD
#   sluice_hip_device_object(<object> <source> <comment> [DEPENDS files...] [FLAGS flags...])
#                           compiles a .cu file of device code into <object>:
#                           hipcc -x hip for SLUICE_HIP_ARCHITECTURES on AMD, nvcc
#                           -x cu for SLUICE_CUDA_ARCHITECTURES on NVIDIA (with
#                           -include hip/hip_runtime.h on both: blockIdx and friends)
if(SLUICE_HIP_PLATFORM STREQUAL "nvidia")
  set(SLUICE_HIP_RUNTIME ${SLUICE_HIP_CUDART_STATIC} Threads::Threads ${CMAKE_DL_LIBS} rt)
  set(SLUICE_HIP_DEFINITIONS __HIP_PLATFORM_NVIDIA__)
  set(SLUICE_HIP_DEVICE_TRAP __trap)
  set(_sluice_hip_device_flags -x cu -std=c++17 -ccbin ${SLUICE_HIP_NVCC_HOST_COMPILER}
                               -Xcompiler=-fPIC -D__HIP_PLATFORM_NVIDIA__)
  foreach(_sluice_arch IN LISTS SLUICE_CUDA_ARCHITECTURES)
    list(APPEND _sluice_hip_device_flags
         "--generate-code=arch=compute_${_sluice_arch},code=[compute_${_sluice_arch},sm_${_sluice_arch}]")
  endforeach()
  set(_sluice_hip_device_compiler ${SLUICE_HIP_NVCC})
  set(_sluice_hip_targets "sm_${SLUICE_CUDA_ARCHITECTURES} (HIP on NVIDIA)")
else()
  set(SLUICE_HIP_RUNTIME hip::host)
  set(SLUICE_HIP_DEFINITIONS "")
  set(SLUICE_HIP_DEVICE_TRAP __builtin_trap)
  list(TRANSFORM SLUICE_HIP_ARCHITECTURES PREPEND "--offload-arch=" OUTPUT_VARIABLE _sluice_hip_device_flags)
  list(PREPEND _sluice_hip_device_flags -x hip -std=c++17 -fPIC)
  set(_sluice_hip_device_compiler ${SLUICE_HIPCC})
  set(_sluice_hip_targets "${SLUICE_HIP_ARCHITECTURES}")
endif()

function(sluice_hip_device_object object source comment)
  cmake_parse_arguments(PARSE_ARGV 3 arg "" "" "DEPENDS;FLAGS")
  add_custom_command(
    OUTPUT ${object}
    COMMAND ${_sluice_hip_device_compiler} ${_sluice_hip_device_flags} -include hip/hip_runtime.h
            -DSLUICE_BACKEND_HIP ${arg_FLAGS} -c ${source} -o ${object}
    DEPENDS ${source} ${arg_DEPENDS}
    COMMENT "${comment} for ${_sluice_hip_targets}"
    VERBATIM)
endfunction()
