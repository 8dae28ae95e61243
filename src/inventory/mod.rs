//! The reclass-compatible inventory engine: class discovery, merge,
//! reference resolution.
