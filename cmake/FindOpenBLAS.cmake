# Finds OpenBLAS built with its pthread back end (Debian: libopenblas-pthread-dev), whose kernels
# are chosen for the CPU at run time. The pthread variant is the one whose openblas_set_num_threads
# leaves OpenMP's settings alone and which may be called from many threads at once (core/blas.cc).
# Defines the imported target OpenBLAS::OpenBLAS.
set(_openblas_dir "/usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/openblas-pthread")
find_library(OpenBLAS_LIBRARY NAMES openblas HINTS "${_openblas_dir}" NO_DEFAULT_PATH)
find_library(OpenBLAS_LIBRARY NAMES openblas)
find_path(OpenBLAS_INCLUDE_DIR NAMES cblas.h
  HINTS "/usr/include/${CMAKE_LIBRARY_ARCHITECTURE}/openblas-pthread" NO_DEFAULT_PATH)
find_path(OpenBLAS_INCLUDE_DIR NAMES cblas.h PATH_SUFFIXES openblas)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(OpenBLAS REQUIRED_VARS OpenBLAS_LIBRARY OpenBLAS_INCLUDE_DIR)
if(OpenBLAS_FOUND AND NOT TARGET OpenBLAS::OpenBLAS)
  add_library(OpenBLAS::OpenBLAS UNKNOWN IMPORTED)
  set_target_properties(OpenBLAS::OpenBLAS PROPERTIES
    IMPORTED_LOCATION "${OpenBLAS_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${OpenBLAS_INCLUDE_DIR}")
endif()
mark_as_advanced(OpenBLAS_LIBRARY OpenBLAS_INCLUDE_DIR)
