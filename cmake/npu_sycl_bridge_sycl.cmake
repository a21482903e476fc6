# Defines the imported target npu_sycl_bridge::sycl_runtime: the DPC++ SYCL runtime for host-only code.
#
# - With the Intel oneAPI compiler (icpx, CMAKE_CXX_COMPILER_ID IntelLLVM) and its IntelSYCL CMake package:
#   IntelSYCL::SYCL_CXX.
# - Otherwise the runtime's headers and libsycl, found under CMAKE_PREFIX_PATH, $SYCL_ROOT or $CMPLR_ROOT
#   (for example the prefix the intel-sycl-rt wheel installs into): plain C++17 compilers build the shim
#   against them with -DSYCL_DISABLE_FSYCL_SYCLHPP_WARNING, since it contains no device code. The installed
#   package also looks in the runtime prefix the bridge was built with (NPU_SYCL_BRIDGE_BUILT_WITH_SYCL).
# Used by this project's CMakeLists.txt and by the installed npu_sycl_bridgeConfig.cmake.
if(TARGET npu_sycl_bridge::sycl_runtime)
  return()
endif()

# The prefix `cargo xtask setup` provisions, as a last resort: the same rule as crates/native-finder's
# provisioned_prefix() ($NPU_SYCL_BRIDGE_HOME, else $XDG_CACHE_HOME/npu-sycl-bridge, else ~/.cache/npu-sycl-bridge).
if(DEFINED ENV{NPU_SYCL_BRIDGE_HOME} AND NOT "$ENV{NPU_SYCL_BRIDGE_HOME}" STREQUAL "")
  set(NPU_SYCL_BRIDGE_PROVISIONED_PREFIX "$ENV{NPU_SYCL_BRIDGE_HOME}/prefix")
elseif(DEFINED ENV{XDG_CACHE_HOME} AND NOT "$ENV{XDG_CACHE_HOME}" STREQUAL "")
  set(NPU_SYCL_BRIDGE_PROVISIONED_PREFIX "$ENV{XDG_CACHE_HOME}/npu-sycl-bridge/prefix")
else()
  set(NPU_SYCL_BRIDGE_PROVISIONED_PREFIX "$ENV{HOME}/.cache/npu-sycl-bridge/prefix")
endif()

# OpenVINO's CMake package: wherever the caller's settings find it (OpenVINO_DIR, OpenVINO_ROOT,
# CMAKE_PREFIX_PATH, system paths); else the pip wheel's layout under CMAKE_PREFIX_PATH or the provisioned
# prefix; else `fallback_dir` (the installed package passes the directory the bridge was built with). Sets
# OpenVINO_DIR; the caller then runs find_package/find_dependency(OpenVINO COMPONENTS Runtime).
macro(npu_sycl_bridge_locate_openvino fallback_dir)
  find_package(OpenVINO CONFIG QUIET COMPONENTS Runtime)
  if(NOT OpenVINO_FOUND)
    set(_nsb_ov_candidates "")
    foreach(_nsb_prefix IN LISTS CMAKE_PREFIX_PATH NPU_SYCL_BRIDGE_PROVISIONED_PREFIX)
      file(GLOB _nsb_ov_glob "${_nsb_prefix}/lib/python3*/site-packages/openvino/cmake")
      list(APPEND _nsb_ov_candidates ${_nsb_ov_glob})
    endforeach()
    list(APPEND _nsb_ov_candidates "${fallback_dir}")
    foreach(_nsb_ov_dir IN LISTS _nsb_ov_candidates)
      if(EXISTS "${_nsb_ov_dir}/OpenVINOConfig.cmake")
        set(OpenVINO_DIR "${_nsb_ov_dir}" CACHE PATH "OpenVINO's CMake package directory" FORCE)
        break()
      endif()
    endforeach()
  endif()
endmacro()

if(CMAKE_CXX_COMPILER_ID STREQUAL "IntelLLVM")
  find_package(IntelSYCL CONFIG QUIET)
endif()

if(IntelSYCL_FOUND AND TARGET IntelSYCL::SYCL_CXX)
  add_library(npu_sycl_bridge::sycl_runtime INTERFACE IMPORTED)
  target_link_libraries(npu_sycl_bridge::sycl_runtime INTERFACE IntelSYCL::SYCL_CXX)
  set(NPU_SYCL_BRIDGE_SYCL_VIA "IntelSYCL (${IntelSYCL_DIR})")
else()
  find_path(NPU_SYCL_BRIDGE_SYCL_INCLUDE_DIR sycl/sycl.hpp
    HINTS ENV SYCL_ROOT ENV CMPLR_ROOT
    PATHS "${NPU_SYCL_BRIDGE_PROVISIONED_PREFIX}" ${NPU_SYCL_BRIDGE_BUILT_WITH_SYCL}
    PATH_SUFFIXES include
    DOC "Directory holding sycl/sycl.hpp (the DPC++ runtime's include directory)")
  find_library(NPU_SYCL_BRIDGE_SYCL_LIBRARY NAMES sycl libsycl.so.9
    HINTS ENV SYCL_ROOT ENV CMPLR_ROOT
    PATHS "${NPU_SYCL_BRIDGE_PROVISIONED_PREFIX}" ${NPU_SYCL_BRIDGE_BUILT_WITH_SYCL}
    PATH_SUFFIXES lib
    DOC "The DPC++ runtime library (libsycl.so.9)")
  if(NOT NPU_SYCL_BRIDGE_SYCL_INCLUDE_DIR OR NOT NPU_SYCL_BRIDGE_SYCL_LIBRARY)
    message(FATAL_ERROR
      "npu_sycl_bridge: the DPC++ SYCL runtime was not found (sycl/sycl.hpp: ${NPU_SYCL_BRIDGE_SYCL_INCLUDE_DIR}, "
      "libsycl: ${NPU_SYCL_BRIDGE_SYCL_LIBRARY}). Put its prefix on CMAKE_PREFIX_PATH (cargo xtask setup installs "
      "it into ~/.cache/npu-sycl-bridge/prefix), set SYCL_ROOT, or build with icpx and the IntelSYCL package.")
  endif()
  add_library(npu_sycl_bridge::sycl_runtime UNKNOWN IMPORTED)
  set_target_properties(npu_sycl_bridge::sycl_runtime PROPERTIES
    IMPORTED_LOCATION "${NPU_SYCL_BRIDGE_SYCL_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${NPU_SYCL_BRIDGE_SYCL_INCLUDE_DIR}"
    INTERFACE_COMPILE_DEFINITIONS "SYCL_DISABLE_FSYCL_SYCLHPP_WARNING")
  set(NPU_SYCL_BRIDGE_SYCL_VIA "${NPU_SYCL_BRIDGE_SYCL_LIBRARY}")
endif()
