//! The change graph: which change waits for which, built the way kapp's
//! `diffgraph` builds it, so that the direct edges are the same set.
//!
//! Pass 1 adds every rule that is not `ignoreIfCyclical` and fails on a
//! cycle. Pass 2 adds the optional rules one edge at a time, skipping
//! self-edges, edges already present and edges that would close a cycle.
//! Which optional edges survive depends on the order they are tried, so
//! rules are tried heaviest first (later config bindings first, annotation
//! rules last), stably in change order.

use super::config::Config;
use super::resource::Resource;
use super::rule::{substitute_placeholders, validate_group_name, ChangeRule, Op, Order};
use super::OrderError;
use std::collections::HashMap;

const GROUP_ANN: &str = "kapp.k14s.io/change-group";
const RULE_ANN: &str = "kapp.k14s.io/change-rule";

/// One resource and what is done to it.
#[derive(Debug, Clone)]
pub struct Change {
    pub resource: Resource,
    pub op: Op,
}

impl Change {
    /// kapp's change description: `(op) kind/name (apiVersion) scope`.
    pub fn description(&self) -> String {
        format!("({}) {}", self.op, self.resource.description())
    }
}

#[derive(Debug, Clone)]
pub struct ChangeGraph {
    changes: Vec<Change>,
    /// `waiting_for[a]` lists the changes `a` waits for, without duplicates.
    waiting_for: Vec<Vec<usize>>,
}

/// `kapp.k14s.io/change-group` or `kapp.k14s.io/change-group.<anything>`.
fn is_ann(key: &str, base: &str) -> bool {
    key.strip_prefix(base)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
}

fn resource_error(res: &Resource, message: String) -> OrderError {
    OrderError::Rule {
        resource: res.description(),
        file: res.origin.file.clone(),
        line: res.origin.line,
        message,
    }
}

/// The change's rules: annotation rules (in document order), then the
/// rules of every matching binding, weighted by binding index.
fn all_rules(res: &Resource, config: &Config) -> Result<Vec<ChangeRule>, OrderError> {
    let mut rules = Vec::new();
    let parse = |template: &str| {
        substitute_placeholders(template, res)
            .and_then(|s| ChangeRule::parse(&s))
            .map_err(|e| resource_error(res, e))
    };
    for (key, value) in &res.annotations {
        if is_ann(key, RULE_ANN) {
            rules.push(parse(value)?);
        }
    }
    for (i, binding) in config.change_rule_bindings.iter().enumerate() {
        if binding.matchers.iter().any(|m| m.matches(res)) {
            for template in &binding.rules {
                let mut rule = parse(template)?;
                rule.ignore_if_cyclical = binding.ignore_if_cyclical;
                rule.weight = 100 + i;
                rules.push(rule);
            }
        }
    }
    Ok(rules)
}

/// The change's groups: annotations first, then matching bindings.
fn groups(res: &Resource, config: &Config) -> Result<Vec<String>, OrderError> {
    let mut out = Vec::new();
    let group = |template: &str| {
        substitute_placeholders(template, res)
            .and_then(|name| validate_group_name(&name).map(|()| name))
            .map_err(|e| resource_error(res, e))
    };
    for (key, value) in &res.annotations {
        if is_ann(key, GROUP_ANN) {
            out.push(group(value)?);
        }
    }
    for binding in &config.change_group_bindings {
        if binding.matchers.iter().any(|m| m.matches(res)) {
            out.push(group(&binding.name)?);
        }
    }
    Ok(out)
}

impl ChangeGraph {
    /// Builds the graph of `changes` (in apply-file order) under `config`.
    pub fn build(changes: Vec<Change>, config: &Config) -> Result<ChangeGraph, OrderError> {
        // Rules of every change are checked first, groups only when some
        // rule needs them: a bad group name nobody refers to is no error in kapp.
        let mut rules: Vec<(usize, ChangeRule)> = Vec::new();
        for (i, change) in changes.iter().enumerate() {
            for rule in all_rules(&change.resource, config)? {
                if change.op != Op::Noop && rule.action == change.op {
                    rules.push((i, rule));
                }
            }
        }
        let mut members: HashMap<String, Vec<usize>> = HashMap::new();
        if !rules.is_empty() {
            for (i, change) in changes.iter().enumerate() {
                for g in groups(&change.resource, config)? {
                    members.entry(g).or_default().push(i);
                }
            }
        }
        rules.sort_by_key(|r| std::cmp::Reverse(r.1.weight));

        let n = changes.len();
        let mut graph = ChangeGraph {
            changes,
            waiting_for: vec![Vec::new(); n],
        };
        // Each (waiter, waited-for) pair a rule produces, in kapp's order.
        let pairs = |rule: &ChangeRule, owner: usize, changes: &[Change]| -> Vec<(usize, usize)> {
            let Some(targets) = members.get(&rule.target_group) else {
                return Vec::new();
            };
            targets
                .iter()
                .filter(|&&t| changes[t].op == rule.target_action)
                .map(|&t| match rule.order {
                    Order::After => (owner, t),
                    Order::Before => (t, owner),
                })
                .collect()
        };

        for (owner, rule) in rules.iter().filter(|(_, r)| !r.ignore_if_cyclical) {
            for (a, b) in pairs(rule, *owner, &graph.changes) {
                graph.waiting_for[a].push(b);
            }
        }
        let post_order = graph.check_cycles()?;

        let mut reach = Reachability::new(&graph.waiting_for, &post_order);
        for (owner, rule) in rules.iter().filter(|(_, r)| r.ignore_if_cyclical) {
            for (a, b) in pairs(rule, *owner, &graph.changes) {
                if a != b && !reach.direct(a, b) && !reach.reaches(b, a) {
                    graph.waiting_for[a].push(b);
                    reach.add_edge(a, b);
                }
            }
        }

        for list in &mut graph.waiting_for {
            let mut seen = vec![false; n];
            list.retain(|&c| !std::mem::replace(&mut seen[c], true));
        }
        Ok(graph)
    }

    pub fn changes(&self) -> &[Change] {
        &self.changes
    }

    /// The changes change `i` waits for, in the order rules added them.
    pub fn waiting_for(&self, i: usize) -> &[usize] {
        &self.waiting_for[i]
    }

    /// Every direct edge `(waiter, waited_for)`.
    pub fn edges(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.waiting_for
            .iter()
            .enumerate()
            .flat_map(|(a, list)| list.iter().map(move |&b| (a, b)))
    }

    /// kapp's apply waves: each wave holds the changes whose dependencies are
    /// all in earlier waves, in input order.
    pub fn waves(&self) -> Vec<Vec<usize>> {
        let n = self.changes.len();
        let mut done = vec![false; n];
        let mut waves = Vec::new();
        let mut remaining = n;
        while remaining > 0 {
            let wave: Vec<usize> = (0..n)
                .filter(|&i| !done[i] && self.waiting_for[i].iter().all(|&c| done[c]))
                .collect();
            if wave.is_empty() {
                // Unreachable after the cycle check; never loop forever.
                break;
            }
            for &i in &wave {
                done[i] = true;
            }
            remaining -= wave.len();
            waves.push(wave);
        }
        waves
    }

    /// Depth-first cycle search in kapp's visiting order (so the reported
    /// cycle is the one kapp reports). Returns the changes in post-order
    /// (every change after all it waits for).
    fn check_cycles(&self) -> Result<Vec<usize>, OrderError> {
        let n = self.changes.len();
        let mut done = vec![false; n];
        let mut on_path = vec![false; n];
        let mut post = Vec::with_capacity(n);
        for root in 0..n {
            if done[root] {
                continue;
            }
            let mut stack: Vec<(usize, usize)> = vec![(root, 0)];
            on_path[root] = true;
            while let Some((node, next)) = stack.last_mut() {
                let node = *node;
                if let Some(&child) = self.waiting_for[node].get(*next) {
                    *next += 1;
                    if done[child] {
                        continue;
                    }
                    if on_path[child] {
                        let mut path: Vec<String> = stack
                            .iter()
                            .map(|(c, _)| self.changes[*c].resource.description())
                            .collect();
                        let repeated = self.changes[child].resource.description();
                        path.push(repeated.clone());
                        return Err(OrderError::Cycle { path, repeated });
                    }
                    on_path[child] = true;
                    stack.push((child, 0));
                } else {
                    on_path[node] = false;
                    done[node] = true;
                    post.push(node);
                    stack.pop();
                }
            }
        }
        Ok(post)
    }
}

/// Direct edges and the transitive closure of "waits for" as bit sets, kept
/// up to date as optional edges are added (kapp walks the graph per edge).
struct Reachability {
    words: usize,
    direct: Vec<u64>,
    reach: Vec<u64>,
}

impl Reachability {
    fn new(waiting_for: &[Vec<usize>], post_order: &[usize]) -> Self {
        let n = waiting_for.len();
        let words = n.div_ceil(64);
        let mut r = Reachability {
            words,
            direct: vec![0; n * words],
            reach: vec![0; n * words],
        };
        for &v in post_order {
            for &c in &waiting_for[v] {
                set(&mut r.direct[v * words..(v + 1) * words], c);
                r.merge_into(v, c);
            }
        }
        r
    }

    fn direct(&self, a: usize, b: usize) -> bool {
        get(&self.direct[a * self.words..(a + 1) * self.words], b)
    }

    /// Whether `a` waits for `b`, directly or transitively.
    fn reaches(&self, a: usize, b: usize) -> bool {
        get(&self.reach[a * self.words..(a + 1) * self.words], b)
    }

    /// `reach[u] |= reach[c] ∪ {c}`.
    fn merge_into(&mut self, u: usize, c: usize) {
        let w = self.words;
        for k in 0..w {
            let bits = self.reach[c * w + k];
            self.reach[u * w + k] |= bits;
        }
        set(&mut self.reach[u * w..(u + 1) * w], c);
    }

    fn add_edge(&mut self, a: usize, b: usize) {
        let w = self.words;
        set(&mut self.direct[a * w..(a + 1) * w], b);
        let n = self.reach.len() / w.max(1);
        for u in 0..n {
            if u == a || self.reaches(u, a) {
                self.merge_into(u, b);
            }
        }
    }
}

fn get(bits: &[u64], i: usize) -> bool {
    bits[i / 64] & (1 << (i % 64)) != 0
}

fn set(bits: &mut [u64], i: usize) {
    bits[i / 64] |= 1 << (i % 64);
}
