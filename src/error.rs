//! Errors shared by every part of the core: reading files and parsing YAML.
//! Each area (inventory, order, packages, ...) adds its own typed errors.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot read {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("invalid yaml in {}:{}:{}: {}", path.display(), source.line, source.col, source.message)]
    Yaml {
        path: PathBuf,
        #[source]
        source: crate::yaml::YamlError,
    },
}

impl Error {
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}

/// Reads a file, naming it in the error.
pub fn read_to_string(path: &std::path::Path) -> Result<String, Error> {
    std::fs::read_to_string(path).map_err(|e| Error::io(path, e))
}

/// Reads and parses every YAML document of a file, naming it in the error.
pub fn read_yaml_all(path: &std::path::Path) -> Result<Vec<crate::yaml::Node>, Error> {
    let text = read_to_string(path)?;
    crate::yaml::load_all(&text).map_err(|source| Error::Yaml {
        path: path.to_path_buf(),
        source,
    })
}
