//! Carvel packages: repositories, version selection, installs.
//!
//! kapp-controller picks, for each `PackageInstall`, the highest `Package`
//! version its `PackageRepository`s offer that satisfies the install's
//! constraints; strata does the same at compile time so the chosen version
//! shows up in the catalog diff. [`version`], [`constraint`] and [`select`]
//! reproduce vendir's version grammar and selection, [`model`] reads the four
//! custom resources, [`install`] resolves installs, [`overlap`] decides what
//! happens when two repositories offer the same package, and [`repo`] fetches
//! repository contents, [`render`] runs a package's template steps and
//! [`target`] is `strata compile`'s packages phase.

pub mod constraint;
pub mod hierarchy;
pub mod install;
pub mod model;
pub mod overlap;
pub mod render;
pub mod repo;
pub mod select;
pub mod target;
pub mod version;
