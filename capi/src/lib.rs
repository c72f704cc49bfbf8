//! C ABI for blobcore: filled in by the C API issue.
