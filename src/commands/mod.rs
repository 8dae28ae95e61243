//! Subcommand handlers: parse-free glue between clap arguments, the core
//! library and rendering. Only this layer (and `cli`) uses `anyhow` and prints.

pub mod catalog;
pub mod ci;
pub mod comment;
pub mod compile;
pub mod completions;
pub mod component;
pub mod config_package;
pub(crate) mod confine;
pub mod diff;
pub mod fetch;
pub mod hooks;
pub mod inventory;
pub mod lint;
pub mod order;
pub mod package;
pub mod push;
pub mod refs;
pub mod review;
pub mod template;
