//! `strata inventory`: render targets and print them as JSON or YAML.

use crate::cli::diag_err;
use crate::cli::eprintln;
use crate::inventory::config::KapitanDefaults;
use crate::inventory::{Inventory, InventoryOptions};
use clap::{Args, ValueEnum};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Json,
    Yaml,
}

/// Options shared by every command that reads an inventory.
#[derive(Debug, Clone, Args)]
pub struct InventoryFlags {
    /// Inventory directory (holds classes/ and targets/) [default: ./inventory, or .kapitan]
    #[arg(long, value_name = "DIR")]
    pub inventory_path: Option<PathBuf>,
    /// Expand `*`, `?` and `[...]` patterns in `classes:` lists
    #[arg(long)]
    pub enable_class_wildcards: bool,
    /// Skip classes that do not exist (and patterns that match nothing)
    #[arg(long)]
    pub ignore_class_not_found: bool,
    /// With --ignore-class-not-found, skip only missing classes matching one of these (searched, not anchored)
    #[arg(long, value_name = "REGEX")]
    pub ignore_class_not_found_regexp: Vec<String>,
    /// Name targets by their path under targets/, joined with `.`
    #[arg(long, alias = "compose-target-name")]
    pub compose_node_name: bool,
}

impl InventoryFlags {
    /// Options from the flags, completed from the `.kapitan` file in the
    /// working directory (flags win).
    /// On a pull request's event the working tree is the pull request's:
    /// its `.kapitan` must not lead outside it (see
    /// [`KapitanDefaults::check_inside`]).
    pub fn options(&self, section: &str) -> anyhow::Result<InventoryOptions> {
        if crate::commands::compile::pull_request_event() {
            KapitanDefaults::check_inside(std::path::Path::new("."), &std::env::current_dir()?)
                .map_err(diag_err)?;
        }
        let defaults = KapitanDefaults::load(std::path::Path::new(".")).map_err(diag_err)?;
        let mut o = InventoryOptions {
            path: self
                .inventory_path
                .clone()
                .unwrap_or_else(|| PathBuf::from("./inventory")),
            enable_class_wildcards: self.enable_class_wildcards,
            ignore_class_notfound: self.ignore_class_not_found,
            ignore_class_notfound_regexp: self.ignore_class_not_found_regexp.clone(),
            compose_node_name: self.compose_node_name,
            applications_negate_earlier_only: false,
            confine: None,
            confine_also: Vec::new(),
        };
        defaults.apply(section, &mut o, self.inventory_path.is_some());
        Ok(o)
    }
}

#[derive(Debug, Args)]
pub struct InventoryArgs {
    #[command(flatten)]
    pub inv: InventoryFlags,
    /// Render only these targets
    #[arg(short = 't', long = "targets", num_args = 1.., value_name = "TARGET")]
    pub targets: Vec<String>,
    /// Output format
    #[arg(long, value_enum, default_value = "json")]
    pub format: Format,
    /// Commodore working directory: list its components, packages or both (with instances)
    #[arg(value_enum, value_name = "VIEW")]
    pub view: Option<crate::commands::catalog::DependencyView>,
    /// With VIEW: the Commodore working directory
    #[arg(
        short = 'd',
        long = "working-dir",
        value_name = "DIR",
        requires = "view"
    )]
    pub working_dir: Option<PathBuf>,
    /// Unknown keys in reclass-config.yml are errors, not warnings
    #[arg(long)]
    pub strict: bool,
    /// Read nothing outside the working directory, as a review reads a pull
    /// request (on by default on a GitHub `pull_request*` event)
    #[arg(long)]
    pub confine: bool,
}

pub fn run(args: InventoryArgs) -> anyhow::Result<ExitCode> {
    if let Some(view) = args.view {
        let dir = args.working_dir.unwrap_or_else(|| PathBuf::from("."));
        return crate::commands::catalog::show_dependencies(
            view,
            &dir,
            args.format == Format::Json,
        );
    }
    let opts = crate::commands::lint::confined_on_pull_request(
        args.inv.options("inventory")?,
        args.confine,
    )?;
    let inv = Inventory::load(&opts).map_err(diag_err)?;
    let mut config_warnings = inv.warnings().to_vec();
    config_warnings.extend(
        KapitanDefaults::load(std::path::Path::new("."))
            .map_err(diag_err)?
            .unknown_keys(std::path::Path::new(".")),
    );
    for w in &config_warnings {
        eprintln!("warning: {w}");
    }
    if args.strict && !config_warnings.is_empty() {
        anyhow::bail!("--strict: the configuration has unknown keys (see the warnings above)");
    }
    let nodes = inv.render(&args.targets).map_err(diag_err)?;
    let mut out = crate::value::Map::default();
    let mut rendered = crate::value::Map::default();
    for (name, node) in nodes {
        let mut m = crate::value::Map::default();
        m.insert(
            "classes".into(),
            crate::value::Value::List(
                node.classes
                    .into_iter()
                    .map(crate::value::Value::String)
                    .collect(),
            ),
        );
        m.insert(
            "applications".into(),
            crate::value::Value::List(
                node.applications
                    .into_iter()
                    .map(crate::value::Value::String)
                    .collect(),
            ),
        );
        m.insert("parameters".into(), node.parameters);
        m.insert("exports".into(), node.exports);
        m.insert(
            "environment".into(),
            crate::value::Value::String(node.environment),
        );
        rendered.insert(name, crate::value::Value::Map(m));
    }
    out.insert("nodes".into(), crate::value::Value::Map(rendered));
    let out = crate::value::Value::Map(out);
    let stdout = std::io::stdout();
    let mut w = std::io::BufWriter::new(stdout.lock());
    match args.format {
        Format::Json => {
            if let Some(path) = out.non_finite_path() {
                anyhow::bail!(
                    "{path} is .inf or .nan, which JSON cannot represent (it would become null): use --format yaml, or quote the value"
                );
            }
            serde_json::to_writer_pretty(&mut w, &out)?;
            writeln!(w)?;
        }
        Format::Yaml => w.write_all(crate::yaml::emit::to_yaml_string(&out).as_bytes())?,
    }
    w.flush()?;
    Ok(ExitCode::SUCCESS)
}
