//! Carvel packages: repositories, version selection, installs.
