//! `strata order`: kapp's apply order for a set of Kubernetes resources,
//! printed as apply waves, direct edges, JSON, or the resources themselves
//! re-ordered.

use crate::cli::diag_err;
use crate::order::{self, ChangeGraph, Document, Op, Ops, Options};
use crate::value::{Map, Value};
use clap::{Args, ValueEnum};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Debug, Args)]
pub struct OrderArgs {
    /// Resource file or directory (.yml/.yaml/.json, recursively); `-` reads stdin.
    /// kapp Config documents among them configure the ordering.
    #[arg(short = 'f', long = "file", required = true, value_name = "PATH")]
    pub files: Vec<PathBuf>,

    /// What is done to every resource
    #[arg(long, value_enum, default_value_t = OpArg::Upsert)]
    pub op: OpArg,

    /// Op of one resource, overriding --op (repeatable), e.g. `--op-for job/old-db=delete`
    #[arg(long = "op-for", value_name = "KIND/NAME=OP", value_parser = parse_op_for)]
    pub op_for: Vec<(String, Op)>,

    /// Leave out kapp's built-in change groups and rules (CRDs first,
    /// namespaces first, RBAC and config before workloads, ...)
    #[arg(long)]
    pub no_default_config: bool,

    /// Output: apply waves, direct edges, JSON, or the resources in apply order
    #[arg(short = 'o', long, value_enum, default_value_t = Format::Waves)]
    pub output: Format,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OpArg {
    Upsert,
    Delete,
    Noop,
}

impl From<OpArg> for Op {
    fn from(o: OpArg) -> Op {
        match o {
            OpArg::Upsert => Op::Upsert,
            OpArg::Delete => Op::Delete,
            OpArg::Noop => Op::Noop,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// kapp's apply waves: one change per line, waves separated by `---`
    Waves,
    /// Direct dependencies, `A -> B` (A waits for B), sorted
    Edges,
    /// Changes with what each waits for, and the waves
    Json,
    /// The resources as a YAML stream in apply order
    Yaml,
}

fn parse_op_for(s: &str) -> Result<(String, Op), String> {
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
    for path in &args.files {
        read_input(path, &mut docs)?;
    }
    let options = Options {
        default_config: !args.no_default_config,
        ops: Ops {
            default: args.op.into(),
            overrides: args.op_for,
        },
    };
    let graph = order::plan(&docs, &options).map_err(diag_err)?;
    let text = match args.output {
        Format::Waves => render_waves(&graph),
        Format::Edges => render_edges(&graph),
        Format::Json => render_json(&graph)?,
        Format::Yaml => render_yaml(&graph),
    };
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
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
    let mut out = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        let entries =
            std::fs::read_dir(&d).map_err(|e| diag_err(crate::error::Error::io(&d, e)))?;
        for entry in entries {
            let p = entry
                .map_err(|e| diag_err(crate::error::Error::io(&d, e)))?
                .path();
            if p.is_dir() {
                pending.push(p);
            } else if matches!(
                p.extension().and_then(|e| e.to_str()),
                Some("yml" | "yaml" | "json")
            ) {
                out.push(p);
            }
        }
    }
    out.sort();
    Ok(out)
}

fn render_waves(graph: &ChangeGraph) -> String {
    let changes = graph.changes();
    let waves: Vec<String> = graph
        .waves()
        .iter()
        .map(|w| w.iter().map(|&i| changes[i].description() + "\n").collect())
        .collect();
    waves.join("---\n")
}

/// Sorted `A -> B` lines. The descriptions are ranked once and the edges
/// sorted by rank, which keeps this cheap for the millions of edges kapp's
/// defaults give large apps.
fn render_edges(graph: &ChangeGraph) -> String {
    let descs: Vec<String> = graph.changes().iter().map(|c| c.description()).collect();
    let mut by_desc: Vec<usize> = (0..descs.len()).collect();
    by_desc.sort_by(|&a, &b| descs[a].cmp(&descs[b]));
    let mut rank = vec![0; descs.len()];
    for (r, &i) in by_desc.iter().enumerate() {
        rank[i] = r;
    }
    let mut edges: Vec<(usize, usize)> = graph.edges().collect();
    edges.sort_unstable_by_key(|&(a, b)| (rank[a], rank[b]));
    let mut out = String::new();
    for (a, b) in edges {
        out.push_str(&descs[a]);
        out.push_str(" -> ");
        out.push_str(&descs[b]);
        out.push('\n');
    }
    out
}

fn render_json(graph: &ChangeGraph) -> anyhow::Result<String> {
    let changes = graph.changes();
    let desc = |i: usize| Value::String(changes[i].description());
    let list = |ids: &[usize]| Value::List(ids.iter().map(|&i| desc(i)).collect());
    let items = changes
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let r = &c.resource;
            let mut m = Map::new();
            m.insert("change".into(), desc(i));
            m.insert("op".into(), Value::String(c.op.to_string()));
            m.insert("apiVersion".into(), Value::String(r.api_version.clone()));
            m.insert("kind".into(), Value::String(r.kind.clone()));
            m.insert("namespace".into(), Value::String(r.namespace.clone()));
            m.insert("name".into(), Value::String(r.name.clone()));
            m.insert("waitingFor".into(), list(graph.waiting_for(i)));
            Value::Map(m)
        })
        .collect();
    let waves = graph.waves().iter().map(|w| list(w)).collect();
    let mut root = Map::new();
    root.insert("changes".into(), Value::List(items));
    root.insert("waves".into(), Value::List(waves));
    Ok(serde_json::to_string_pretty(&Value::Map(root))? + "\n")
}

fn render_yaml(graph: &ChangeGraph) -> String {
    let docs: Vec<Value> = graph
        .waves()
        .into_iter()
        .flatten()
        .map(|i| graph.changes()[i].resource.doc.clone())
        .collect();
    crate::yaml::emit::to_yaml_stream(&docs)
}
