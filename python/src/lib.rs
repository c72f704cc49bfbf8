//! Python bindings for blobcore: filled in by the Python issue.
