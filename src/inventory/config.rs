//! Inventory options from files: `reclass-config.yml` in the inventory
//! directory and the `.kapitan` defaults file in the working directory.
//! Command-line flags win over both.

use super::{InventoryError, InventoryOptions};
use crate::value::Value;
use std::path::Path;

/// The keys of `reclass-config.yml` that strata reads.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct ReclassConfig {
    pub nodes_uri: Option<String>,
    pub classes_uri: Option<String>,
    pub ignore_class_notfound: Option<bool>,
    pub ignore_class_notfound_regexp: Vec<String>,
    pub compose_node_name: Option<bool>,
    pub enable_class_wildcards: Option<bool>,
    /// `"<glob or /regex/> <class>..."` entries, in file order.
    pub class_mappings: Vec<String>,
    /// The line of each `class_mappings` entry.
    pub class_mapping_lines: Vec<usize>,
    /// Match `class_mappings` against the node's path under the nodes
    /// directory (`test/a`) instead of its name.
    pub class_mappings_match_path: bool,
    /// The keys strata does not understand.
    pub warnings: Vec<ConfigWarning>,
}

/// A configuration key strata does not understand (and ignores).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ConfigWarning {
    pub path: std::path::PathBuf,
    pub key: String,
}

impl std::fmt::Display for ConfigWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: unknown key `{}` ignored",
            self.path.display(),
            self.key
        )
    }
}

fn read_yaml_value(path: &Path) -> Result<Option<Value>, InventoryError> {
    if !path.is_file() {
        return Ok(None);
    }
    let text = std::fs::read_to_string(path).map_err(|e| InventoryError::Io {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    let node = crate::yaml::load_one(&text).map_err(|y| InventoryError::Yaml {
        path: path.to_path_buf(),
        line: y.line,
        col: y.col,
        message: y.message,
    })?;
    Ok(node.map(|n| n.to_value()))
}

fn strings(v: Option<&Value>) -> Vec<String> {
    match v {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::List(l)) => l
            .iter()
            .filter_map(|x| x.as_str().map(str::to_string))
            .collect(),
        _ => Vec::new(),
    }
}

impl ReclassConfig {
    pub fn load(inventory: &Path) -> Result<ReclassConfig, InventoryError> {
        let path = inventory.join("reclass-config.yml");
        let Some(v) = read_yaml_value(&path)? else {
            return Ok(ReclassConfig::default());
        };
        let get = |k: &str| v.as_map().and_then(|m| m.get(k));
        let s = |k: &str| get(k).and_then(|x| x.as_str()).map(str::to_string);
        let b = |k: &str| get(k).and_then(Value::as_bool);
        let unsupported = |key: &str, message: &str| InventoryError::UnsupportedConfig {
            path: path.clone(),
            key: key.to_string(),
            message: message.to_string(),
        };
        let class_mappings = match get("class_mappings") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::List(l)) => l
                .iter()
                .map(|x| {
                    x.as_str().map(str::to_string).ok_or_else(|| {
                        unsupported("class_mappings", "every entry must be a string")
                    })
                })
                .collect::<Result<_, _>>()?,
            Some(_) => return Err(unsupported("class_mappings", "expected a list")),
        };
        if get("ignore_overwritten_missing_references").and_then(Value::as_bool) == Some(false) {
            return Err(unsupported(
                "ignore_overwritten_missing_references",
                "strata always ignores a missing reference that a later value overwrites (reclass-rs's default); remove the key or set it to true",
            ));
        }
        if let Some(flags) = get("reclass_rs_compat_flags") {
            if !matches!(flags, Value::Null) && flags.as_list().is_none_or(|l| !l.is_empty()) {
                return Err(unsupported(
                    "reclass_rs_compat_flags",
                    "strata renders as reclass-rs does without compatibility flags; remove the key",
                ));
            }
        }
        let class_mapping_lines = std::fs::read_to_string(&path)
            .ok()
            .and_then(|t| crate::yaml::load_one(&t).ok().flatten())
            .and_then(|n| {
                n.get("class_mappings").and_then(|l| match &l.value {
                    crate::yaml::NodeValue::Seq(items) => {
                        Some(items.iter().map(|i| i.line).collect::<Vec<_>>())
                    }
                    _ => None,
                })
            })
            .unwrap_or_default();
        let mut warnings = Vec::new();
        if let Some(m) = v.as_map() {
            for k in m.keys() {
                let known = matches!(
                    k.as_str(),
                    "nodes_uri"
                        | "classes_uri"
                        | "ignore_class_notfound"
                        | "ignore_class_notfound_regexp"
                        | "compose_node_name"
                        | "enable_class_wildcards"
                        | "class_mappings"
                        | "class_mappings_match_path"
                        | "ignore_overwritten_missing_references"
                        | "reclass_rs_compat_flags"
                        | "verbose_warnings"
                );
                // Python reclass's settings that Kapitan's reclass backend
                // accepts and that change nothing there: the CLI's output
                // format, the one storage strata reads, and the base URI
                // (Kapitan joins nodes_uri/classes_uri to the inventory path
                // itself). Kapitan's own examples/terraform sets all four.
                let no_effect = match k.as_str() {
                    "pretty_print" | "output" | "inventory_base_uri" => true,
                    "storage_type" => m.get(k).and_then(Value::as_str) == Some("yaml_fs"),
                    _ => false,
                };
                if !known && !no_effect {
                    warnings.push(ConfigWarning {
                        path: path.clone(),
                        key: k.to_string(),
                    });
                }
            }
        }
        warnings.sort();
        Ok(ReclassConfig {
            nodes_uri: s("nodes_uri"),
            classes_uri: s("classes_uri"),
            ignore_class_notfound: b("ignore_class_notfound"),
            ignore_class_notfound_regexp: strings(get("ignore_class_notfound_regexp")),
            compose_node_name: b("compose_node_name"),
            enable_class_wildcards: b("enable_class_wildcards"),
            class_mappings,
            class_mapping_lines,
            class_mappings_match_path: b("class_mappings_match_path").unwrap_or(false),
            warnings,
        })
    }

    /// Fills options that no flag set.
    pub fn apply(&self, o: &mut InventoryOptions) {
        o.ignore_class_notfound |= self.ignore_class_notfound.unwrap_or(false);
        o.compose_node_name |= self.compose_node_name.unwrap_or(false);
        o.enable_class_wildcards |= self.enable_class_wildcards.unwrap_or(false);
        if o.ignore_class_notfound_regexp.is_empty() {
            o.ignore_class_notfound_regexp = self.ignore_class_notfound_regexp.clone();
        }
    }
}

/// A value as an error shows it: short scalars quoted, others by kind.
pub fn describe(v: &Value) -> String {
    match v {
        Value::String(s) if s.is_empty() => "an empty string".into(),
        Value::String(s) if s.chars().count() <= 60 => format!("`{s}`"),
        Value::String(_) => "a long string".into(),
        Value::Int(i) => format!("`{i}`"),
        Value::Float(f) => format!("`{f}`"),
        Value::Bool(b) => format!("`{b}`"),
        Value::Null => "null".into(),
        Value::List(_) => "a list".into(),
        Value::Map(_) => "a map".into(),
    }
}

/// Kapitan's `.kapitan` file: per-command defaults keyed by flag name.
#[derive(Debug, Default, Clone)]
pub struct KapitanDefaults {
    root: Option<Value>,
}

impl KapitanDefaults {
    /// Refuses `dir/.kapitan` when it leads outside `tree` (a symlink to a
    /// file of the machine, or a dangling one): a pull request commits the
    /// working tree's `.kapitan`, and one linked to a file of the runner
    /// had that file read and its keys, or a value, quoted in the job's log
    /// (probe 31, kapitan-file-symlink-read-outside-on-pull-request).
    /// Call it before [`Self::load`] where the tree is a pull request's.
    pub fn check_inside(dir: &Path, tree: &Path) -> Result<(), InventoryError> {
        let path = dir.join(".kapitan");
        if path.symlink_metadata().is_err() {
            return Ok(());
        }
        let tree = tree.canonicalize().unwrap_or_else(|_| tree.to_path_buf());
        super::discover::check_inside(&path, &tree)
    }

    /// Reads `.kapitan` from `dir`; a missing file gives empty defaults.
    pub fn load(dir: &Path) -> Result<KapitanDefaults, InventoryError> {
        let path = dir.join(".kapitan");
        let d = KapitanDefaults {
            root: read_yaml_value(&path)?,
        };
        d.check()
            .map_err(|message| InventoryError::Config { path, message })?;
        Ok(d)
    }

    /// A file or section that is not a map was ignored: an error naming
    /// it (re-probe 11). Values of other types are read as Kapitan reads
    /// them: they become its flags' defaults (see [`Self::get_bool`]).
    fn check(&self) -> Result<(), String> {
        let root = match &self.root {
            None | Some(Value::Null) => return Ok(()),
            Some(Value::Map(m)) => m,
            Some(v) => {
                return Err(format!(
                    "the file is {}: write a map of sections (`compile:`, `inventory:`, `global:`)",
                    describe(v)
                ))
            }
        };
        // The sections strata reads; an unknown key gets a warning instead.
        const READ: &[&str] = &["compile", "inventory", "global", "inventory_backend"];
        for (section, body) in root {
            if !READ.contains(&section.as_str()) || matches!(body, Value::Null | Value::Map(_)) {
                continue;
            }
            return Err(format!(
                "section `{section}` is {}: write a map of settings",
                describe(body)
            ));
        }
        Ok(())
    }

    /// Top-level keys Kapitan does not read (its sections are its command
    /// names, `global` and `version`; `inventory_backend` is strata's),
    /// sorted. `dir` is where `.kapitan` was read from.
    pub fn unknown_keys(&self, dir: &Path) -> Vec<ConfigWarning> {
        const KNOWN: &[&str] = &[
            "global",
            "version",
            "eval",
            "compile",
            "inventory",
            "searchvar",
            "secrets",
            "refs",
            "lint",
            "init",
            "validate",
            "inventory_backend",
        ];
        // Kapitan 0.36.3's flags of these commands (`kapitan C --help`),
        // plus the inventory flags strata adds.
        const COMPILE: &[&str] = &[
            "cache",
            "compose-target-name",
            "embed-refs",
            "enable-class-wildcards",
            "fetch",
            "force",
            "force-fetch",
            "ignore-version-check",
            "indent",
            "inventory-backend",
            "inventory-path",
            "inventory-pool-cache",
            "jinja2-filters",
            "labels",
            "migrate",
            "no-reveal",
            "output-path",
            "parallelism",
            "prune",
            "quiet",
            "refs-path",
            "reveal",
            "schemas-path",
            "search-paths",
            "targets",
            "use-go-jsonnet",
            "validate",
            "verbose",
            "yaml-dump-null-as-empty",
            "yaml-multiline-string-style",
            "yaml-use-rapidyaml",
        ];
        const INVENTORY: &[&str] = &[
            "compose-target-name",
            "enable-class-wildcards",
            "flat",
            "indent",
            "inventory-backend",
            "inventory-path",
            "migrate",
            "multiline-string-style",
            "pattern",
            "target-name",
            "topics",
            "verbose",
        ];
        const STRATA: &[&str] = &[
            "ignore-class-not-found",
            "ignore-class-not-found-regexp",
            "compose-node-name",
        ];
        let path = dir.join(".kapitan");
        let mut out = Vec::new();
        let Some(m) = self.root.as_ref().and_then(Value::as_map) else {
            return out;
        };
        for (k, v) in m {
            if !KNOWN.contains(&k.as_str()) {
                out.push(ConfigWarning {
                    path: path.clone(),
                    key: k.to_string(),
                });
                continue;
            }
            let flags = match k.as_str() {
                "compile" => COMPILE,
                "inventory" => INVENTORY,
                _ => continue,
            };
            for f in v
                .as_map()
                .map(|m| m.keys().collect::<Vec<_>>())
                .unwrap_or_default()
            {
                let dashed = f.replace('_', "-");
                if !flags.contains(&dashed.as_str()) && !STRATA.contains(&dashed.as_str()) {
                    out.push(ConfigWarning {
                        path: path.clone(),
                        key: format!("{k}.{f}"),
                    });
                }
            }
        }
        out.sort();
        out
    }

    /// The value for `flag` (e.g. `inventory-path`) in `section` (e.g.
    /// `compile`), falling back to the `global` section. Underscores and
    /// dashes are interchangeable, as in Kapitan.
    pub fn get(&self, section: &str, flag: &str) -> Option<&Value> {
        let root = self.root.as_ref()?.as_map()?;
        let alt = flag.replace('-', "_");
        for sec in [section, "global"] {
            if let Some(m) = root.get(sec).and_then(Value::as_map) {
                if let Some(v) = m.get(flag).or_else(|| m.get(&alt)) {
                    return Some(v);
                }
            }
        }
        None
    }

    /// A switch as Kapitan reads it: the value becomes the flag's default,
    /// so Python's truth counts (`"yes"`, `1` and any non-empty string are
    /// true; before, anything but a YAML boolean was false; re-probe 11).
    pub fn get_bool(&self, section: &str, flag: &str) -> bool {
        self.get(section, flag).is_some_and(Value::is_truthy)
    }

    /// A path setting; an empty one is the working directory, as Kapitan's
    /// `os.path.join("", ...)` reads it.
    pub fn get_path(&self, section: &str, flag: &str) -> Option<String> {
        self.get_str(section, flag)
            .map(|p| if p.trim().is_empty() { ".".into() } else { p })
    }

    pub fn get_str(&self, section: &str, flag: &str) -> Option<String> {
        self.get(section, flag)
            .and_then(|v| v.as_str())
            .map(str::to_string)
    }

    pub fn get_strings(&self, section: &str, flag: &str) -> Vec<String> {
        strings(self.get(section, flag))
    }

    /// `inventory_backend: {enable-class-wildcards: true}` (also accepted
    /// under the `inventory` section).
    pub fn class_wildcards(&self) -> bool {
        let from_backend = self
            .root
            .as_ref()
            .and_then(Value::as_map)
            .and_then(|m| m.get("inventory_backend"))
            .and_then(Value::as_map)
            .and_then(|m| {
                m.get("enable-class-wildcards")
                    .or_else(|| m.get("enable_class_wildcards"))
            })
            .is_some_and(Value::is_truthy);
        from_backend || self.get_bool("inventory", "enable-class-wildcards")
    }

    /// Applies the defaults of `section` to options that no flag set.
    pub fn apply(&self, section: &str, o: &mut InventoryOptions, path_from_flag: bool) {
        if !path_from_flag {
            if let Some(p) = self.get_path(section, "inventory-path") {
                o.path = p.into();
            }
        }
        o.enable_class_wildcards |= self.class_wildcards();
        o.ignore_class_notfound |= self.get_bool(section, "ignore-class-not-found");
        o.compose_node_name |= self.get_bool(section, "compose-node-name")
            || self.get_bool(section, "compose-target-name");
        if o.ignore_class_notfound_regexp.is_empty() {
            o.ignore_class_notfound_regexp =
                self.get_strings(section, "ignore-class-not-found-regexp");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_kapitan_sections_are_named() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(".kapitan"),
            "version: 0.36\ncomplie:\n  inventory-path: x\nglobal: {}\nzz: 1\ncompile:\n  inventory_path: i\n  output-pth: o\n",
        )
        .unwrap();
        let k = KapitanDefaults::load(dir.path()).unwrap();
        let w: Vec<String> = k
            .unknown_keys(dir.path())
            .iter()
            .map(|w| w.to_string())
            .collect();
        assert_eq!(w.len(), 3, "{w:?}");
        assert!(
            w[0].contains(".kapitan: unknown key `compile.output-pth`"),
            "{w:?}"
        );
        assert!(w[1].contains("unknown key `complie`"), "{w:?}");
        assert!(w[2].contains("unknown key `zz`"), "{w:?}");
    }

    #[test]
    fn kapitan_defaults_sections() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(".kapitan"),
            "global:\n  inventory-path: inv\ncompile:\n  inventory_path: other\ninventory_backend:\n  enable-class-wildcards: true\n",
        )
        .unwrap();
        let k = KapitanDefaults::load(dir.path()).unwrap();
        assert_eq!(
            k.get_str("compile", "inventory-path").as_deref(),
            Some("other")
        );
        assert_eq!(
            k.get_str("inventory", "inventory-path").as_deref(),
            Some("inv")
        );
        let mut o = InventoryOptions::default();
        k.apply("inventory", &mut o, false);
        assert!(o.enable_class_wildcards);
        assert_eq!(o.path, std::path::PathBuf::from("inv"));
    }

    #[test]
    fn reclass_config_flags_win() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("reclass-config.yml"),
            "ignore_class_notfound: true\nignore_class_notfound_regexp: ['^a']\n",
        )
        .unwrap();
        let c = ReclassConfig::load(dir.path()).unwrap();
        let mut o = InventoryOptions {
            ignore_class_notfound_regexp: vec!["^b".into()],
            ..Default::default()
        };
        c.apply(&mut o);
        assert!(o.ignore_class_notfound);
        assert_eq!(o.ignore_class_notfound_regexp, ["^b"]);
    }
}
