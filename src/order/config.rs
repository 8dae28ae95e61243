//! kapp Config documents, as far as ordering goes: `changeGroupBindings`
//! and `changeRuleBindings`, from `kapp.k14s.io/v1alpha1` Config documents,
//! ConfigMaps labelled `kapp.k14s.io/config`, and kapp's built-in defaults.
//! Other Config sections (rebase rules, wait rules, ...) are accepted and
//! ignored.

use super::decode::{self, Ctx};
use super::matcher::Matcher;
use super::resource::Resource;
use super::OrderError;
use crate::yaml::Node;
use std::path::Path;

pub const CONFIG_API_VERSION: &str = "kapp.k14s.io/v1alpha1";
pub const CONFIG_KIND: &str = "Config";
/// Label marking a ConfigMap whose `data."config.yml"` is a kapp Config.
pub const CONFIG_LABEL: &str = "kapp.k14s.io/config";

const DEFAULT_CONFIG: &str = include_str!("default_config.yaml");

/// A change group given to every resource the matchers select.
#[derive(Debug, Clone, PartialEq)]
pub struct ChangeGroupBinding {
    /// May contain placeholders such as `{name}`.
    pub name: String,
    pub matchers: Vec<Matcher>,
    /// `<file>: changeGroupBindings[i]`, for error messages.
    pub origin: String,
}

/// Change rules given to every resource the matchers select.
#[derive(Debug, Clone, PartialEq)]
pub struct ChangeRuleBinding {
    /// Rule strings, possibly with placeholders.
    pub rules: Vec<String>,
    pub ignore_if_cyclical: bool,
    pub matchers: Vec<Matcher>,
    /// `<file>: changeRuleBindings[i]`, for error messages.
    pub origin: String,
}

/// The ordering part of one or more kapp Configs, concatenated in order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Config {
    pub change_group_bindings: Vec<ChangeGroupBinding>,
    pub change_rule_bindings: Vec<ChangeRuleBinding>,
}

impl Config {
    /// kapp's built-in default bindings (what `kapp deploy` starts from).
    pub fn kapp_defaults() -> Config {
        // Parsed once per process: a review plans every changed target on
        // both sides (2 ms each).
        static DEFAULTS: std::sync::OnceLock<Config> = std::sync::OnceLock::new();
        DEFAULTS
            .get_or_init(|| {
                let node = crate::yaml::load_one(DEFAULT_CONFIG)
                    .ok()
                    .flatten()
                    .expect("the embedded default config is valid YAML");
                Config::from_node(&node, Path::new("<kapp default config>"))
                    .expect("the embedded default config is a valid kapp Config")
            })
            .clone()
    }

    /// Appends another config's bindings after this one's (binding indexes,
    /// and so rule weights, continue across configs).
    pub fn extend(&mut self, other: Config) {
        self.change_group_bindings
            .extend(other.change_group_bindings);
        self.change_rule_bindings.extend(other.change_rule_bindings);
    }

    /// Parses one kapp Config document.
    pub fn from_node(node: &Node, file: &Path) -> Result<Config, OrderError> {
        let root = Ctx::new(file, "");
        let api_version = decode::string(node, "apiVersion", &root)?;
        let kind = decode::string(node, "kind", &root)?;
        if api_version != CONFIG_API_VERSION || kind != CONFIG_KIND {
            return Err(root.error(
                node,
                format!(
                    "a kapp config must have apiVersion `{CONFIG_API_VERSION}` and kind `{CONFIG_KIND}`, found `{api_version}` `{kind}`"
                ),
            ));
        }
        let matchers = |n: &Node, c: &Ctx| -> Result<Vec<Matcher>, OrderError> {
            decode::list(n, "resourceMatchers", c)?
                .into_iter()
                .map(|(m, mc)| Matcher::parse(m, &mc))
                .collect()
        };
        let mut config = Config::default();
        let origin = |c: &Ctx| format!("{}: {}", file.display(), c.path);
        for (n, c) in decode::list(node, "changeGroupBindings", &root)? {
            config.change_group_bindings.push(ChangeGroupBinding {
                name: decode::string(n, "name", &c)?,
                matchers: matchers(n, &c)?,
                origin: origin(&c),
            });
        }
        for (n, c) in decode::list(node, "changeRuleBindings", &root)? {
            config.change_rule_bindings.push(ChangeRuleBinding {
                rules: decode::string_list(n, "rules", &c)?,
                ignore_if_cyclical: decode::boolean(n, "ignoreIfCyclical", &c)?,
                matchers: matchers(n, &c)?,
                origin: origin(&c),
            });
        }
        Ok(config)
    }
}

/// What a document of the input is, as kapp sorts them.
pub enum DocKind {
    /// A kapp Config: configures ordering, is not itself applied.
    Config(Config),
    /// A ConfigMap labelled as kapp config: configures ordering *and* is applied.
    ConfigAndResource(Config),
    Resource,
}

/// Classifies a resource: a kapp Config, a labelled ConfigMap holding one,
/// or a plain resource. `node` is the resource's own YAML node (for positions).
pub fn classify(res: &Resource, node: &Node) -> Result<DocKind, OrderError> {
    let file = &res.origin.file;
    if res.api_version == CONFIG_API_VERSION {
        return Config::from_node(node, file).map(DocKind::Config);
    }
    if !res.labels.contains_key(CONFIG_LABEL) {
        return Ok(DocKind::Resource);
    }
    let bad = |message: String| OrderError::Config {
        file: file.clone(),
        line: res.origin.line,
        field: String::new(),
        message,
    };
    if res.api_version != "v1" || res.kind != "ConfigMap" {
        return Err(bad(format!(
            "{} is labelled `{CONFIG_LABEL}` but only a v1 ConfigMap can hold kapp config",
            res.description()
        )));
    }
    let text = match res.doc.get_path(&["data", "config.yml"]) {
        Some(crate::value::Value::String(s)) => s,
        _ => {
            return Err(bad(format!(
                "{} is labelled `{CONFIG_LABEL}` but has no string `data.\"config.yml\"`",
                res.description()
            )))
        }
    };
    let inner_file = format!(
        "{} (data.\"config.yml\" of {})",
        file.display(),
        res.description()
    );
    let inner = crate::yaml::load_one(text)
        .map_err(|e| bad(format!("invalid YAML in {inner_file}: {e}")))?
        .ok_or_else(|| bad(format!("{inner_file} is empty")))?;
    Config::from_node(&inner, Path::new(&inner_file)).map(DocKind::ConfigAndResource)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_parse() {
        let c = Config::kapp_defaults();
        assert_eq!(c.change_group_bindings.len(), 13);
        assert_eq!(c.change_rule_bindings.len(), 9);
        assert_eq!(
            c.change_group_bindings[1].name,
            "change-groups.kapp.k14s.io/crds-{crd-group}-{crd-kind}"
        );
        assert!(!c.change_rule_bindings[0].ignore_if_cyclical);
        assert!(c.change_rule_bindings[8].ignore_if_cyclical);
        assert_eq!(c.change_rule_bindings[6].rules.len(), 4);
        assert_eq!(
            c.change_rule_bindings[3].origin,
            "<kapp default config>: changeRuleBindings[3]"
        );
    }

    #[test]
    fn config_errors_name_the_field() {
        let node = crate::yaml::load_one(
            "apiVersion: kapp.k14s.io/v1alpha1\nkind: Config\nchangeRuleBindings:\n- rules: [a]\n  ignoreIfCyclical: 'yes'\n",
        )
        .unwrap()
        .unwrap();
        let e = Config::from_node(&node, Path::new("c.yaml")).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("changeRuleBindings[0].ignoreIfCyclical"),
            "{msg}"
        );
        assert!(msg.contains("c.yaml:5"), "{msg}");
        let node = crate::yaml::load_one("apiVersion: kapp.k14s.io/v1alpha1\nkind: Other\n")
            .unwrap()
            .unwrap();
        assert!(Config::from_node(&node, Path::new("c.yaml")).is_err());
    }
}
