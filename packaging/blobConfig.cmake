# blobConfig.cmake: defines the imported target blob::blob (libblob.so + blob.h).
get_filename_component(_blob_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
if(NOT TARGET blob::blob)
  add_library(blob::blob SHARED IMPORTED)
  file(GLOB _blob_lib "${_blob_prefix}/lib/libblob.so.*.*.*")
  set_target_properties(blob::blob PROPERTIES
    IMPORTED_LOCATION "${_blob_lib}"
    IMPORTED_SONAME "libblob.so.0"
    INTERFACE_INCLUDE_DIRECTORIES "${_blob_prefix}/include")
  unset(_blob_lib)
endif()
set(blob_FOUND TRUE)
unset(_blob_prefix)
