//! strata: Kapitan/reclass-compatible inventories, Kapitan/Commodore-style
//! compilation and Carvel-style ordering, packages and templates.
//!
//! The library never prints: every module returns values, typed errors and
//! [`diagnostics::Diagnostic`]s, and the CLI layer ([`cli`], [`commands`])
//! renders them.

pub mod catalog;
pub mod child;
pub mod ci;
pub mod cli;
pub mod commands;
pub mod commodore;
pub mod compile;
pub mod confine;
pub mod diagnostics;
pub mod diff;
pub mod error;
pub mod fetch;
pub mod fswalk;
pub mod git;
pub mod github;
pub mod hooks;
pub mod inventory;
pub mod limits;
pub mod lint;
pub mod memguard;
pub mod memtree;
pub mod order;
pub mod packages;
pub mod publish;
pub mod refs;
pub mod remote;
pub mod template;
pub mod value;
pub mod workspace;
pub mod yaml;
