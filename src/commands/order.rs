//! `strata order`: kapp's apply order for a set of Kubernetes resources (a
//! compiled catalog or any manifests), printed as waves with the edges that
//! put changes there, direct edges, JSON, a Mermaid graph, or the resources
//! themselves in apply order.

use crate::cli::diag_err;
use crate::order::{self, ChangeGraph, Document, Op, Ops, Options};
use crate::value::{Map, Value};
use clap::{Args, ValueEnum};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Debug, Args)]
pub struct OrderArgs {
    /// Resource files or directories (.yml/.yaml/.json, recursively); `-` reads
    /// stdin. kapp Config documents among them configure the ordering.
    #[arg(value_name = "FILES", required_unless_present = "catalog")]
    pub files: Vec<PathBuf>,

    /// A compiled catalog directory: every YAML/JSON file below it
    #[arg(long, value_name = "DIR", conflicts_with = "files")]
    pub catalog: Option<PathBuf>,

    /// Order a deletion of every resource (default: applying them)
    #[arg(long)]
    pub delete: bool,

    /// What is done to one resource, overriding the default (repeatable),
    /// e.g. `--op job/old-db=delete`; OP is upsert, delete or noop
    #[arg(long = "op", value_name = "KIND/NAME=OP", value_parser = parse_op)]
    pub ops: Vec<(String, Op)>,

    /// A kapp Config file (changeGroupBindings / changeRuleBindings) applied
    /// after the defaults (repeatable)
    #[arg(long = "order-config", value_name = "FILE")]
    pub order_configs: Vec<PathBuf>,

    /// Leave out kapp's built-in change groups and rules (CRDs first,
    /// namespaces first, config and RBAC before workloads, ...)
    #[arg(long)]
    pub no_default_config: bool,

    /// Order every resource with the namespace it is written with, as
    /// kapp's change-graph tests do: `kapp deploy` first removes it from
    /// cluster-scoped resources (Namespace, ClusterRole, CRDs' `scope:
    /// Cluster` kinds, ...) and puts namespaced ones written without one
    /// into its `-n` namespace
    #[arg(long, visible_alias = "as-written")]
    pub keep_cluster_scoped_namespaces: bool,

    /// kapp's `-n`: the namespace a namespaced resource written without one
    /// is ordered in (kapp's fallback is `$KAPP_NAMESPACE`, then the
    /// kubeconfig context's namespace, `default` when it names none); `''`
    /// leaves such resources without one
    #[arg(
        long,
        short = 'n',
        value_name = "NS",
        env = "KAPP_NAMESPACE",
        default_value = order::KAPP_DEFAULT_NAMESPACE,
        value_parser = parse_namespace
    )]
    pub namespace: String,

    /// Output format
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,

    /// Read nothing outside the working directory but paths outside it
    /// given as arguments: no symlink below an input directory (or
    /// committed as an input file) may lead out (on by default on a GitHub
    /// `pull_request*` event)
    #[arg(long)]
    pub confine: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Waves of changes, each change with the changes it waits for
    Text,
    /// Changes with what each waits for, and the waves
    Json,
    /// Direct dependencies, `A -> B` (A waits for B), sorted
    Edges,
    /// The resources as one YAML stream in apply order
    Yaml,
    /// The waves and edges as a Mermaid flowchart
    Mermaid,
    /// kapp's own linearization: changes by wave, waves separated by `---`
    Waves,
}

/// A namespace name is a DNS label; anything else would only fail later
/// as a bad change group name (`...namespaces-{namespace}`).
fn parse_namespace(s: &str) -> Result<String, String> {
    let label = s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-');
    if label {
        Ok(s.to_string())
    } else {
        Err(format!(
            "`{s}` is not a namespace name (lower-case letters, digits and `-`, at most 63, starting and ending with a letter or digit)"
        ))
    }
}

fn parse_op(s: &str) -> Result<(String, Op), String> {
    let (key, op) = s
        .rsplit_once('=')
        .ok_or_else(|| format!("expected KIND/NAME=OP, got `{s}`"))?;
    if !key.contains('/') {
        return Err(format!("expected KIND/NAME before `=`, got `{key}`"));
    }
    let op = Op::parse(op).ok_or_else(|| format!("unknown op `{op}` (upsert, delete or noop)"))?;
    Ok((key.to_string(), op))
}

pub fn run(args: OrderArgs) -> anyhow::Result<ExitCode> {
    let mut docs = Vec::new();
    let inputs = match &args.catalog {
        Some(dir) => std::slice::from_ref(dir),
        None => args.files.as_slice(),
    };
    let given: Vec<&Path> = inputs
        .iter()
        .chain(&args.order_configs)
        .map(PathBuf::as_path)
        .collect();
    let confine = crate::commands::confine::working_tree("order", args.confine, &given)?;
    crate::commands::confine::check_inputs(confine.as_ref(), given.iter().copied())?;
    for path in inputs {
        read_input(path, &mut docs)?;
    }
    let mut extra_config = order::Config::default();
    for path in &args.order_configs {
        let mut config_docs = Vec::new();
        read_input(path, &mut config_docs)?;
        extra_config.extend(order::config_from_documents(&config_docs).map_err(diag_err)?);
    }
    let options = Options {
        default_config: !args.no_default_config,
        extra_config,
        ops: Ops {
            default: if args.delete { Op::Delete } else { Op::Upsert },
            overrides: args.ops,
        },
        keep_cluster_scoped_namespaces: args.keep_cluster_scoped_namespaces,
        default_namespace: args.namespace,
    };
    let graph = order::plan(&docs, &options).map_err(diag_err)?;
    // Written as made: the text of millions of dependencies is gigabytes
    // (re-probe 16 aborted on a 2 GB buffer under the graph's own bound).
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    match args.format {
        Format::Text => render_text(&graph, &mut out)?,
        Format::Json => render_json(&graph, &mut out)?,
        Format::Edges => render_edges(&graph, &mut out)?,
        Format::Yaml => out.write_all(render_yaml(&graph).as_bytes())?,
        Format::Mermaid => out.write_all(order::mermaid(&graph).as_bytes())?,
        Format::Waves => out.write_all(render_waves(&graph).as_bytes())?,
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

fn read_input(path: &Path, docs: &mut Vec<Document>) -> anyhow::Result<()> {
    if path == Path::new("-") {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| anyhow::anyhow!("cannot read stdin: {e}"))?;
        docs.extend(order::parse_documents(Path::new("<stdin>"), &text).map_err(diag_err)?);
        return Ok(());
    }
    if path.is_dir() {
        for file in yaml_files(path)? {
            read_input(&file, docs)?;
        }
        return Ok(());
    }
    let text = crate::error::read_to_string(path).map_err(diag_err)?;
    docs.extend(order::parse_documents(path, &text).map_err(diag_err)?);
    Ok(())
}

/// YAML/JSON files under a directory, sorted by path for a stable order.
fn yaml_files(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let files = crate::fswalk::files_below(dir, &|_| true)
        .map_err(|e| diag_err(crate::error::Error::io(&e.path, e.source)))?;
    Ok(files
        .into_iter()
        .filter(|p| {
            matches!(
                p.extension().and_then(|e| e.to_str()),
                Some("yml" | "yaml" | "json")
            )
        })
        .collect())
}

fn descriptions(graph: &ChangeGraph) -> Vec<String> {
    graph.changes().iter().map(|c| c.description()).collect()
}

fn render_text(graph: &ChangeGraph, out: &mut impl Write) -> std::io::Result<()> {
    let descs = descriptions(graph);
    let waves = graph.waves();
    for (w, wave) in waves.iter().enumerate() {
        let plural = if wave.len() == 1 { "" } else { "s" };
        writeln!(out, "wave {} ({} change{plural})", w + 1, wave.len())?;
        for &i in wave {
            writeln!(out, "  {}", descs[i])?;
            for &dep in graph.waiting_for(i) {
                writeln!(out, "    after {}", descs[dep])?;
            }
        }
    }
    Ok(())
}

fn render_waves(graph: &ChangeGraph) -> String {
    let descs = descriptions(graph);
    let waves: Vec<String> = graph
        .waves()
        .iter()
        .map(|w| w.iter().map(|&i| descs[i].clone() + "\n").collect())
        .collect();
    waves.join("---\n")
}

/// Sorted `A -> B` lines. The descriptions are ranked once and the edges
/// sorted by rank, which keeps this cheap for the millions of edges kapp's
/// defaults give large apps.
fn render_edges(graph: &ChangeGraph, out: &mut impl Write) -> std::io::Result<()> {
    let descs = descriptions(graph);
    let mut by_desc: Vec<usize> = (0..descs.len()).collect();
    by_desc.sort_by(|&a, &b| descs[a].cmp(&descs[b]));
    let mut rank = vec![0; descs.len()];
    for (r, &i) in by_desc.iter().enumerate() {
        rank[i] = r;
    }
    let mut edges: Vec<(usize, usize)> = graph.edges().collect();
    edges.sort_unstable_by_key(|&(a, b)| (rank[a], rank[b]));
    for (a, b) in edges {
        writeln!(out, "{} -> {}", descs[a], descs[b])?;
    }
    Ok(())
}

/// A sequence serialised as its items are made (see [`render_json`]).
struct Lazy<I>(std::cell::RefCell<Option<I>>);

impl<I, T> serde::Serialize for Lazy<I>
where
    I: Iterator<Item = T>,
    T: serde::Serialize,
{
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let items = self.0.borrow_mut().take();
        s.collect_seq(items.into_iter().flatten())
    }
}

/// Each change's object is made, written and dropped in turn: all of
/// them at once held every dependency's description twice.
fn render_json(graph: &ChangeGraph, out: &mut impl Write) -> anyhow::Result<()> {
    let changes = graph.changes();
    let desc = |i: usize| Value::String(changes[i].description());
    let list = |ids: &[usize]| Value::List(ids.iter().map(|&i| desc(i)).collect());
    let items = changes.iter().enumerate().map(|(i, c)| {
        let r = &c.resource;
        let mut m = Map::default();
        m.insert("change".into(), desc(i));
        m.insert("op".into(), Value::String(c.op.to_string()));
        m.insert("apiVersion".into(), Value::String(r.api_version.clone()));
        m.insert("kind".into(), Value::String(r.kind.clone()));
        m.insert("namespace".into(), Value::String(r.namespace.clone()));
        m.insert("name".into(), Value::String(r.name.clone()));
        m.insert("waitingFor".into(), list(graph.waiting_for(i)));
        Value::Map(m)
    });
    let waves = graph.waves();
    #[derive(serde::Serialize)]
    struct Root<A: serde::Serialize, B: serde::Serialize> {
        changes: A,
        waves: B,
    }
    let root = Root {
        changes: Lazy(std::cell::RefCell::new(Some(items))),
        waves: Lazy(std::cell::RefCell::new(Some(waves.iter().map(|w| list(w))))),
    };
    serde_json::to_writer_pretty(&mut *out, &root)?;
    writeln!(out)?;
    Ok(())
}

/// The resources in apply order, each as written in its file when its text
/// could be cut out (so quoting and comments survive: kubectl reads YAML
/// 1.1, where an unquoted `ON` is a boolean), re-emitted otherwise.
fn render_yaml(graph: &ChangeGraph) -> String {
    let docs: Vec<String> = graph
        .waves()
        .into_iter()
        .flatten()
        .map(|i| {
            let res = &graph.changes()[i].resource;
            match &res.raw {
                Some(text) => text.trim_end().to_string() + "\n",
                None => crate::yaml::emit::to_yaml_string(&res.doc),
            }
        })
        .collect();
    docs.join("---\n")
}
