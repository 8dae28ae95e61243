//! ytt overlays on node trees: `@overlay/match` (by, expects, missing_ok,
//! when), `@overlay/match-child-defaults` and the operations merge, remove,
//! replace, insert, append and assert, on document sets, maps and arrays.

use super::eval::{AnnVal, FuncRef, Matcher};
use super::node::{Kind, Node, Pos, Scalar, Val};

#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct OverlayError {
    pub message: String,
    /// Whether the error came from a `when=` expectation (then it means
    /// "skip", not "fail").
    pub conditional: bool,
}

fn oerr(message: impl Into<String>) -> OverlayError {
    OverlayError {
        message: message.into(),
        conditional: false,
    }
}

/// An argument for a Starlark function called by the overlay engine.
pub enum Arg {
    Int(i64),
    Str(String),
    Val(Val),
    /// A value that was a plain Starlark dict/list (annotation arguments).
    Plain(Val),
    /// A value kept from an evaluation (function, tuple, struct).
    Kept(FuncRef),
    List(Vec<Arg>),
    Dict(Vec<(String, Arg)>),
}

/// Calls Starlark functions (matchers, `via=`, `expects=`, validations).
pub trait Caller {
    fn call(&mut self, f: &FuncRef, args: Vec<Arg>) -> Result<Val, String>;
    /// Calls one of strata's Starlark helpers by name.
    fn call_helper(&mut self, name: &str, args: Vec<Arg>) -> Result<Val, String>;
}

fn call_bool(c: &mut dyn Caller, f: &FuncRef, args: Vec<Arg>) -> Result<bool, OverlayError> {
    match c.call(f, args).map_err(oerr)? {
        Val::Scalar(super::node::Scalar::Bool(b)) => Ok(b),
        other => Err(oerr(format!(
            "Expected function to return a boolean, but was {}",
            other.type_name()
        ))),
    }
}

#[derive(Debug, Clone, Default)]
pub struct Expects {
    expects: Option<AnnVal>,
    missing_ok: Option<AnnVal>,
    when: Option<AnnVal>,
}

impl Expects {
    fn fill(&mut self, d: &Expects) {
        if self.expects.is_none() {
            self.expects = d.expects.clone();
        }
        if self.missing_ok.is_none() {
            self.missing_ok = d.missing_ok.clone();
        }
        if self.when.is_none() {
            self.when = d.when.clone();
        }
    }

    fn check(&self, matches: &[Pos], what: &str, c: &mut dyn Caller) -> Result<(), OverlayError> {
        let cond = self.when.is_some();
        let r =
            match (&self.missing_ok, &self.expects, &self.when) {
                (Some(_), Some(_), _) => return Err(oerr(
                    "Expected only one of keyword arguments ('missing_ok', 'expects') specified",
                )),
                (Some(_), _, Some(_)) => {
                    return Err(oerr(
                        "Expected only one of keyword arguments ('missing_ok', 'when') specified",
                    ))
                }
                (_, Some(_), Some(_)) => {
                    return Err(oerr(
                        "Expected only one of keyword arguments ('when', 'expects') specified",
                    ))
                }
                (Some(m), _, _) => match m.as_bool() {
                    Some(true) => {
                        check_value(&Expect::List(vec![Expect::Int(0), Expect::Int(1)]), matches)
                    }
                    Some(false) => check_value(&Expect::Int(1), matches),
                    None => {
                        return Err(oerr(
                            "Expected keyword argument 'missing_ok' to be a boolean",
                        ))
                    }
                },
                (_, _, Some(AnnVal::Func(f))) | (_, Some(AnnVal::Func(f)), _) => {
                    if call_bool(c, f, vec![Arg::Int(matches.len() as i64)])? {
                        Ok(())
                    } else {
                        Err("Expectation of number of matched nodes failed".to_string())
                    }
                }
                (_, _, Some(w)) => check_value(&to_expect(w, "when")?, matches),
                (_, Some(e), _) => check_value(&to_expect(e, "expects")?, matches),
                _ => check_value(&Expect::Int(1), matches),
            };
        r.map_err(|m| OverlayError {
            message: if what.is_empty() {
                m
            } else {
                format!("{m} {what}")
            },
            conditional: cond,
        })
    }
}

enum Expect {
    Int(i64),
    AtLeast(i64),
    List(Vec<Expect>),
}

fn to_expect(v: &AnnVal, kw: &str) -> Result<Expect, OverlayError> {
    match v {
        AnnVal::Data(Val::Scalar(Scalar::Int(i))) => Ok(Expect::Int(*i)),
        AnnVal::Data(Val::Scalar(Scalar::Str(s))) => match s.strip_suffix('+').map(|n| n.parse::<i64>()) {
            Some(Ok(n)) => Ok(Expect::AtLeast(n)),
            _ => Err(oerr(format!("Expected '{s}' to be in format 'i+' where i is an integer"))),
        },
        AnnVal::Data(Val::Node(n)) if n.kind == Kind::Array => {
            let mut out = Vec::new();
            for i in &n.items {
                out.push(to_expect(&AnnVal::Data(i.val.clone()), kw)?);
            }
            Ok(Expect::List(out))
        }
        _ => Err(oerr(format!(
            "Expected 'overlay/match' annotation keyword argument '{kw}' to be either int, string or function (functions are not supported by strata yet)"
        ))),
    }
}

fn positions(m: &[Pos]) -> String {
    if m.is_empty() {
        return String::new();
    }
    let mut l: Vec<String> = m.iter().map(|p| p.to_string()).collect();
    l.sort();
    format!(" (lines: {})", l.join(", "))
}

fn check_value(e: &Expect, matches: &[Pos]) -> Result<(), String> {
    let n = matches.len() as i64;
    match e {
        Expect::Int(i) => {
            if *i != n {
                return Err(format!(
                    "Expected number of matched nodes to be {i}, but was {n}{}",
                    positions(matches)
                ));
            }
            Ok(())
        }
        Expect::AtLeast(i) => {
            if n < *i {
                return Err(format!(
                    "Expected number of matched nodes to be >= {i}, but was {n}{}",
                    positions(matches)
                ));
            }
            Ok(())
        }
        Expect::List(l) => {
            let mut last = Ok(());
            for x in l {
                last = check_value(x, matches);
                if last.is_ok() {
                    return Ok(());
                }
            }
            last
        }
    }
}

struct MatchAnn {
    by: Option<AnnVal>,
    expects: Expects,
    present: bool,
}

fn read_match(node: &Node, defaults: &Expects) -> Result<MatchAnn, OverlayError> {
    let mut m = MatchAnn {
        by: None,
        expects: Expects::default(),
        present: false,
    };
    if let Some(a) = node.ann("overlay/match") {
        m.present = true;
        for (k, v) in &a.kwargs {
            match k.as_str() {
                "by" => m.by = Some(v.clone()),
                "expects" => m.expects.expects = Some(v.clone()),
                "missing_ok" => m.expects.missing_ok = Some(v.clone()),
                "when" => m.expects.when = Some(v.clone()),
                other => {
                    return Err(oerr(format!(
                        "Unknown 'overlay/match' annotation keyword argument '{other}'"
                    )))
                }
            }
        }
    }
    m.expects.fill(defaults);
    Ok(m)
}

fn child_defaults(node: &Node, parent: &Expects) -> Result<Expects, OverlayError> {
    let mut e = Expects::default();
    if let Some(a) = node.ann("overlay/match-child-defaults") {
        for (k, v) in &a.kwargs {
            match k.as_str() {
                "expects" => e.expects = Some(v.clone()),
                "missing_ok" => e.missing_ok = Some(v.clone()),
                "when" => e.when = Some(v.clone()),
                other => {
                    return Err(oerr(format!(
                    "Unknown 'overlay/match-child-defaults' annotation keyword argument '{other}'"
                )))
                }
            }
        }
    }
    e.fill(parent);
    Ok(e)
}

#[derive(PartialEq, Clone, Copy)]
enum Op {
    Merge,
    Remove,
    Replace,
    Insert,
    Append,
    Assert,
}

fn which_op(node: &Node) -> Result<Op, OverlayError> {
    let mut found = None;
    for (name, op) in [
        ("overlay/merge", Op::Merge),
        ("overlay/remove", Op::Remove),
        ("overlay/replace", Op::Replace),
        ("overlay/insert", Op::Insert),
        ("overlay/append", Op::Append),
        ("overlay/assert", Op::Assert),
    ] {
        if node.has_ann(name) {
            if found.is_some() {
                return Err(oerr("Expected to find only one overlay operation"));
            }
            found = Some(op);
        }
    }
    Ok(found.unwrap_or(Op::Merge))
}

/// Why [`compare`] failed: the values differ, or the evaluation's
/// comparison budget ran out (an error, not a mismatch).
pub enum Mismatch {
    Differs(String),
    Budget(OverlayError),
}

impl From<String> for Mismatch {
    fn from(m: String) -> Self {
        Mismatch::Differs(m)
    }
}

/// Leaf/structure comparison of `overlay.subset` and `@overlay/assert`.
/// Counts against [`MAX_MATCH_STEPS`]: a map is compared key by key with
/// every left key, so 100 `overlay.subset` matchers of 500 keys on 2,000
/// documents of 500 keys made 50 billion key comparisons (90 s, stopped
/// only by the evaluation's time limit).
pub fn compare(left: &Val, right: &Val) -> Result<(), Mismatch> {
    match right {
        Val::Node(r) => match r.kind {
            Kind::Map => {
                let Some(l) = left.as_node().filter(|l| l.kind == Kind::Map) else {
                    return Err(format!("Expected map, but was {}", left.type_name()).into());
                };
                count_steps(r.items.len().saturating_mul(l.items.len()))
                    .map_err(Mismatch::Budget)?;
                for ri in &r.items {
                    let mut matched = false;
                    for li in &l.items {
                        if li.key.same(&ri.key) {
                            compare(&li.val, &ri.val)?;
                            matched = true;
                        }
                    }
                    if !matched {
                        return Err("Expected at least one map item to match by key"
                            .to_string()
                            .into());
                    }
                }
                Ok(())
            }
            Kind::Array => {
                let Some(l) = left.as_node().filter(|l| l.kind == Kind::Array) else {
                    return Err(format!("Expected array, but was {}", left.type_name()).into());
                };
                count_steps(r.items.len()).map_err(Mismatch::Budget)?;
                for (i, ri) in r.items.iter().enumerate() {
                    let Some(li) = l.items.get(i) else {
                        return Err("Expected to have matching number of array items"
                            .to_string()
                            .into());
                    };
                    compare(&li.val, &ri.val)?;
                }
                Ok(())
            }
            _ => Err("Unexpected document set".to_string().into()),
        },
        Val::Scalar(rs) => match left {
            Val::Scalar(ls) if ls.same(rs) => Ok(()),
            _ => Err(format!(
                "Expected leaf values to match {} {}",
                left.type_name(),
                right.type_name()
            )
            .into()),
        },
    }
}

/// Deep equality of values (map order ignored as ytt's struct equality).
pub fn val_equal(a: &Val, b: &Val) -> bool {
    match (a, b) {
        (Val::Scalar(x), Val::Scalar(y)) => x.same(y),
        (Val::Node(x), Val::Node(y)) => {
            x.kind == y.kind
                && x.items.len() == y.items.len()
                && match x.kind {
                    Kind::Map => {
                        // Each key is looked for among all of the other's:
                        // charged, checked by the matcher that asked.
                        add_steps(x.items.len().saturating_mul(y.items.len()));
                        x.items.iter().all(|xi| {
                            y.items
                                .iter()
                                .any(|yi| yi.key.same(&xi.key) && val_equal(&xi.val, &yi.val))
                        })
                    }
                    _ => x
                        .items
                        .iter()
                        .zip(&y.items)
                        .all(|(xi, yi)| val_equal(&xi.val, &yi.val)),
                }
        }
        _ => false,
    }
}

enum MatchFn {
    Builtin(Matcher),
    Func(FuncRef),
}

fn run_match_fn(
    m: &MatchFn,
    idx: usize,
    key: Option<&Scalar>,
    left: &Val,
    right: &Val,
    c: &mut dyn Caller,
) -> Result<bool, OverlayError> {
    match m {
        MatchFn::Builtin(b) => run_matcher(b, idx, left, right),
        MatchFn::Func(f) => {
            let first = match key {
                Some(k) => Arg::Val(Val::Scalar(k.clone())),
                None => Arg::Int(idx as i64),
            };
            call_bool(
                c,
                f,
                vec![first, Arg::Val(left.clone()), Arg::Val(right.clone())],
            )
        }
    }
}

/// Runs a built-in matcher (for Starlark code calling it directly).
pub fn run_builtin_matcher(
    m: &Matcher,
    idx: usize,
    left: &Val,
    right: &Val,
) -> Result<bool, OverlayError> {
    run_matcher(m, idx, left, right)
}

fn run_matcher(m: &Matcher, idx: usize, left: &Val, right: &Val) -> Result<bool, OverlayError> {
    Ok(match m {
        Matcher::All => true,
        Matcher::Index(i) => *i == idx as i64,
        Matcher::Subset(s) => match compare(left, s) {
            Ok(()) => true,
            Err(Mismatch::Differs(_)) => false,
            Err(Mismatch::Budget(e)) => return Err(e),
        },
        Matcher::MapKey(k) => {
            let lv = left
                .as_node()
                .filter(|n| n.kind == Kind::Map)
                .and_then(|n| n.get(k));
            let rv = right
                .as_node()
                .filter(|n| n.kind == Kind::Map)
                .and_then(|n| n.get(k));
            match (lv, rv) {
                (Some(l), Some(r)) => {
                    let same = val_equal(&l.val, &r.val);
                    count_steps(0)?;
                    same
                }
                (_, None) => return Err(oerr(format!("Expected new item to have map key '{k}'"))),
                _ => false,
            }
        }
        Matcher::And(ms) => {
            for x in ms {
                if !run_matcher(x, idx, left, right)? {
                    return Ok(false);
                }
            }
            true
        }
        Matcher::Or(ms) => {
            for x in ms {
                if run_matcher(x, idx, left, right)? {
                    return Ok(true);
                }
            }
            false
        }
        Matcher::Not(x) => !run_matcher(x, idx, left, right)?,
    })
}

fn as_matcher(by: &AnnVal) -> Result<MatchFn, OverlayError> {
    match by {
        AnnVal::Matcher(m) => Ok(MatchFn::Builtin(m.clone())),
        AnnVal::Func(f) => Ok(MatchFn::Func(f.clone())),
        AnnVal::Data(Val::Scalar(Scalar::Str(s))) => Ok(MatchFn::Builtin(Matcher::MapKey(s.clone()))),
        AnnVal::Other(t) => Err(oerr(format!(
            "Expected 'overlay/match' annotation keyword argument 'by' to be a ytt matcher; {t} matchers are not supported by strata yet"
        ))),
        AnnVal::Data(v) => Err(oerr(format!(
            "Expected 'overlay/match' annotation keyword argument 'by' to be either string (for map key) or function, but was {}",
            v.type_name()
        ))),
    }
}

fn flat(v: &Val) -> String {
    match v {
        Val::Scalar(s) => s.display(),
        Val::Node(n) if n.kind == Kind::Map => {
            let items: Vec<String> = n
                .items
                .iter()
                .map(|i| format!("{}: {}", i.key.display(), flat(&i.val)))
                .collect();
            format!("{{{}}}", items.join(", "))
        }
        Val::Node(n) => {
            let items: Vec<String> = n.items.iter().map(|i| flat(&i.val)).collect();
            format!("[{}]", items.join(", "))
        }
    }
}

fn describe_matcher(m: &MatchFn) -> String {
    fn b(m: &Matcher) -> String {
        match m {
            Matcher::All => "overlay.all".into(),
            Matcher::Subset(v) => format!("overlay.subset({})", flat(v)),
            Matcher::MapKey(k) => format!("overlay.map_key(\"{k}\")"),
            Matcher::Index(i) => format!("overlay.index({i})"),
            Matcher::And(ms) => format!(
                "overlay.and_op({})",
                ms.iter().map(b).collect::<Vec<_>>().join(", ")
            ),
            Matcher::Or(ms) => format!(
                "overlay.or_op({})",
                ms.iter().map(b).collect::<Vec<_>>().join(", ")
            ),
            Matcher::Not(x) => format!("overlay.not_op({})", b(x)),
        }
    }
    match m {
        MatchFn::Builtin(x) => b(x),
        MatchFn::Func(f) => f.desc.clone(),
    }
}

fn describe_keys(v: &Val) -> String {
    match v.as_node() {
        Some(n) if n.kind == Kind::Map => {
            let keys: Vec<String> = n.items.iter().take(4).map(|i| i.key.display()).collect();
            format!("{{{}}}", keys.join(", "))
        }
        _ => v.type_name().to_string(),
    }
}

/// Applies overlay `right` (a map, array or document set with overlay
/// annotations) onto `left`. Returns true when the caller should replace
/// its value with `right` (scalars).
pub fn apply(
    left: &mut Val,
    right: &Val,
    defaults: &Expects,
    c: &mut dyn Caller,
) -> Result<bool, OverlayError> {
    let Val::Node(r) = right else {
        return Ok(true);
    };
    match r.kind {
        Kind::Map => {
            let Some(l) = left.as_node_mut().filter(|l| l.kind == Kind::Map) else {
                return Err(oerr(format!("Expected map, but was {}", left.type_name())));
            };
            for item in &r.items {
                map_item(l, item, defaults, c).map_err(|e| OverlayError {
                    message: format!(
                        "Map item (key '{}') on line {}: {}",
                        item.key.display(),
                        item.pos,
                        e.message
                    ),
                    conditional: false,
                })?;
            }
            Ok(false)
        }
        Kind::Array => {
            let Some(l) = left.as_node_mut().filter(|l| l.kind == Kind::Array) else {
                return Err(oerr(format!(
                    "Expected array, but was {}",
                    left.type_name()
                )));
            };
            for item in &r.items {
                array_item(l, item, defaults, c).map_err(|e| OverlayError {
                    message: format!("Array item on line {}: {}", item.pos, e.message),
                    conditional: false,
                })?;
            }
            Ok(false)
        }
        Kind::DocSet => {
            let Some(l) = left.as_node_mut().filter(|l| l.kind == Kind::DocSet) else {
                return Err(oerr(format!(
                    "Expected document set, but was {}",
                    left.type_name()
                )));
            };
            apply_docset(l, r, defaults, c)?;
            Ok(false)
        }
        _ => Ok(true),
    }
}

fn ann_type(v: &AnnVal) -> String {
    match v {
        AnnVal::Data(Val::Scalar(Scalar::Str(_))) => "starlark.String".into(),
        AnnVal::Data(Val::Scalar(Scalar::Int(_))) => "starlark.Int".into(),
        AnnVal::Data(Val::Scalar(Scalar::Bool(_))) => "starlark.Bool".into(),
        AnnVal::Data(Val::Scalar(Scalar::Float(_))) => "starlark.Float".into(),
        AnnVal::Data(Val::Scalar(Scalar::Null)) => "starlark.NoneType".into(),
        AnnVal::Data(d) => d.type_name().to_string(),
        AnnVal::Matcher(_) => "matcher".into(),
        AnnVal::Func(_) => "function".into(),
        AnnVal::Other(t) => t.clone(),
    }
}

fn skip_conditional(
    r: Result<Vec<usize>, OverlayError>,
) -> Result<Option<Vec<usize>>, OverlayError> {
    match r {
        Ok(v) => Ok(Some(v)),
        Err(e) if e.conditional => Ok(None),
        Err(e) => Err(e),
    }
}

/// Items an evaluation's overlays may compare (every left item, per overlay
/// item, counts one): a few hundred kilobytes of overlays on as many
/// documents made billions of comparisons (1,000 overlays on 2,000
/// documents ran past 60 s), which no Starlark limit sees.
pub const MAX_MATCH_STEPS: u64 = 20_000_000;

thread_local! {
    /// Comparisons made on this thread; each template evaluation runs on a
    /// thread of its own, so this counts one evaluation.
    static MATCH_STEPS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Adds `n` to this evaluation's comparisons without checking the limit
/// (for [`val_equal`], which returns a plain answer; its caller checks).
fn add_steps(n: usize) -> u64 {
    MATCH_STEPS.with(|s| {
        let t = s.get().saturating_add(n as u64);
        s.set(t);
        t
    })
}

fn count_steps(n: usize) -> Result<(), OverlayError> {
    let total = add_steps(n);
    if total > MAX_MATCH_STEPS {
        return Err(oerr(format!(
            "overlays compared more than {MAX_MATCH_STEPS} items (overlays x documents x keys): apply fewer overlays, or to fewer documents"
        )));
    }
    Ok(())
}

fn map_indexes(
    l: &Node,
    item: &Node,
    defaults: &Expects,
    c: &mut dyn Caller,
) -> Result<Vec<usize>, OverlayError> {
    count_steps(l.items.len())?;
    let m = read_match(item, defaults)?;
    let mut idxs = Vec::new();
    let mut poss = Vec::new();
    match &m.by {
        None => {
            for (i, li) in l.items.iter().enumerate() {
                if li.key.same(&item.key) {
                    idxs.push(i);
                    poss.push(li.pos.clone());
                }
            }
        }
        Some(by) => {
            let matcher = as_matcher(by)?;
            for (i, li) in l.items.iter().enumerate() {
                if run_match_fn(&matcher, i, Some(&li.key), &li.val, &item.val, c)? {
                    idxs.push(i);
                    poss.push(li.pos.clone());
                }
            }
        }
    }
    let what = if idxs.is_empty() {
        let keys: Vec<String> = l.items.iter().map(|i| i.key.display()).collect();
        format!(
            "(looked for key '{}' among keys [{}])",
            item.key.display(),
            keys.join(", ")
        )
    } else {
        String::new()
    };
    m.expects.check(&poss, &what, c)?;
    Ok(idxs)
}

fn map_item(
    l: &mut Node,
    item: &Node,
    defaults: &Expects,
    c: &mut dyn Caller,
) -> Result<(), OverlayError> {
    apply_to_items(l, item, defaults, c, Items::Map)
}

fn replace_or_add(item: &Node) -> Result<bool, OverlayError> {
    let Some(a) = item.ann("overlay/replace") else {
        return Ok(false);
    };
    for (k, v) in &a.kwargs {
        match k.as_str() {
            "or_add" => {
                return v
                    .as_bool()
                    .ok_or_else(|| oerr("Expected 'or_add' to be a boolean"))
            }
            "via" => {}
            other => {
                return Err(oerr(format!(
                    "Unknown 'overlay/replace' annotation keyword argument '{other}'"
                )))
            }
        }
    }
    Ok(false)
}

fn replace_value(
    item: &Node,
    existing: Option<&Node>,
    c: &mut dyn Caller,
) -> Result<Val, OverlayError> {
    let mut v = item.val.clone();
    strip_overlay_anns_val(&mut v);
    if let Some(a) = item.ann("overlay/replace") {
        match a.kwarg("via") {
            Some(AnnVal::Func(f)) => {
                let left = existing.map(|e| e.val.clone()).unwrap_or(Val::null());
                return c.call(f, vec![Arg::Val(left), Arg::Val(v)]).map_err(oerr);
            }
            Some(other) => {
                return Err(oerr(format!(
                    "Expected 'overlay/replace' annotation keyword argument 'via' to be function, but was {}",
                    ann_type(other)
                )))
            }
            None => {}
        }
    }
    Ok(v)
}

fn assert_check(item: &Node, left: &Node, c: &mut dyn Caller) -> Result<(), OverlayError> {
    if let Some(a) = item.ann("overlay/assert") {
        match a.kwarg("via") {
            Some(AnnVal::Func(f)) => {
                let mut r = item.val.clone();
                strip_overlay_anns_val(&mut r);
                let res = c
                    .call(f, vec![Arg::Val(left.val.clone()), Arg::Val(r)])
                    .map_err(oerr)?;
                return match res {
                    Val::Scalar(Scalar::Null) | Val::Scalar(Scalar::Bool(true)) => Ok(()),
                    Val::Scalar(Scalar::Bool(false)) => Err(oerr(
                        "Expected via invocation to return true, but was false",
                    )),
                    Val::Node(n) if n.kind == Kind::Array && n.items.len() == 2 => {
                        match (&n.items[0].val, &n.items[1].val) {
                            (Val::Scalar(Scalar::Bool(true)), _) => Ok(()),
                            (Val::Scalar(Scalar::Bool(false)), Val::Scalar(Scalar::Str(m))) => {
                                Err(oerr(format!(
                                    "Expected via invocation to return true, but was false with message: {m}"
                                )))
                            }
                            _ => Err(oerr("Expected @overlay/assert via function to return a tuple of (bool, string)")),
                        }
                    }
                    other => Err(oerr(format!(
                        "Expected via invocation to return NoneType, Bool or Tuple(Bool,String), but returned neither of those (got {})",
                        other.type_name()
                    ))),
                };
            }
            Some(other) => {
                return Err(oerr(format!(
                    "Expected 'overlay/assert' annotation keyword argument 'via' to be function, but was {}",
                    ann_type(other)
                )))
            }
            None => {}
        }
    }
    compare(&left.val, &item.val).map_err(|e| match e {
        Mismatch::Differs(e) => oerr(format!("Expected objects to equal, but did not: {e}")),
        Mismatch::Budget(e) => e,
    })
}

fn array_indexes(
    l: &Node,
    item: &Node,
    defaults: &Expects,
    c: &mut dyn Caller,
) -> Result<Vec<usize>, OverlayError> {
    if !item.has_ann("overlay/match") {
        // unannotated array items match nothing (and expect nothing)
        return Ok(vec![]);
    }
    let m = read_match(item, defaults)?;
    let Some(by) = &m.by else {
        if item
            .ann("overlay/match")
            .map(|a| a.kwargs.is_empty())
            .unwrap_or(true)
        {
            return Err(oerr(
                "Expected 'overlay/match' annotation to have at least one keyword argument (by=..., expects=...)",
            ));
        }
        return Err(oerr(
            "Expected 'overlay/match' annotation keyword argument 'by' to be specified",
        ));
    };
    let matcher = as_matcher(by)?;
    count_steps(l.items.len())?;
    let mut idxs = Vec::new();
    let mut poss = Vec::new();
    for (i, li) in l.items.iter().enumerate() {
        if run_match_fn(&matcher, i, None, &li.val, &item.val, c)? {
            idxs.push(i);
            poss.push(li.pos.clone());
        }
    }
    let what = if idxs.is_empty() {
        format!(
            "(compared {} array items with {})",
            l.items.len(),
            describe_keys(&item.val)
        )
    } else {
        String::new()
    };
    m.expects.check(&poss, &what, c)?;
    Ok(idxs)
}

fn array_item(
    l: &mut Node,
    item: &Node,
    defaults: &Expects,
    c: &mut dyn Caller,
) -> Result<(), OverlayError> {
    apply_to_items(l, item, defaults, c, Items::Array)
}

fn insert_value(item: &Node, existing: &Node, c: &mut dyn Caller) -> Result<Node, OverlayError> {
    let mut n = item.clone();
    strip_overlay_anns(&mut n);
    if let Some(AnnVal::Func(f)) = item.ann("overlay/insert").and_then(|a| a.kwarg("via")) {
        n.val = c
            .call(
                f,
                vec![Arg::Val(existing.val.clone()), Arg::Val(n.val.clone())],
            )
            .map_err(oerr)?;
    }
    Ok(n)
}

fn insert_where(item: &Node) -> Result<(bool, bool), OverlayError> {
    let Some(a) = item.ann("overlay/insert") else {
        return Err(oerr("Expected item to have 'overlay/insert' annotation"));
    };
    if a.kwargs.is_empty() {
        return Err(oerr(
            "Expected 'overlay/insert' annotation to have at least one keyword argument (before=..., after=...)",
        ));
    }
    let mut before = false;
    let mut after = false;
    for (k, v) in &a.kwargs {
        match k.as_str() {
            "before" => before = v.as_bool().unwrap_or(false),
            "after" => after = v.as_bool().unwrap_or(false),
            "via" => {
                if !matches!(v, AnnVal::Func(_)) {
                    return Err(oerr(format!(
                        "Expected 'overlay/insert' annotation keyword argument 'via' to be function, but was {}",
                        ann_type(v)
                    )));
                }
            }
            other => {
                return Err(oerr(format!(
                    "Unknown 'overlay/insert' annotation keyword argument '{other}'"
                )))
            }
        }
    }
    Ok((before, after))
}

fn doc_indexes(
    left: &Node,
    doc: &Node,
    defaults: &Expects,
    c: &mut dyn Caller,
) -> Result<Vec<usize>, OverlayError> {
    let m = read_match(doc, defaults)?;
    if doc
        .ann("overlay/match")
        .map(|a| a.kwargs.is_empty())
        .unwrap_or(true)
    {
        return Err(oerr(
            "Expected 'overlay/match' annotation to have at least one keyword argument (by=..., expects=...)",
        ));
    }
    let Some(by) = &m.by else {
        return Err(oerr(
            "Expected 'overlay/match' annotation keyword argument 'by'  to be specified",
        ));
    };
    let matcher = as_matcher(by)?;
    count_steps(left.items.len())?;
    let mut idxs = Vec::new();
    let mut poss = Vec::new();
    for (i, ld) in left.items.iter().enumerate() {
        if run_match_fn(&matcher, i, None, &ld.val, &doc.val, c)? {
            idxs.push(i);
            poss.push(ld.pos.clone());
        }
    }
    let what = if idxs.is_empty() {
        let docs: Vec<String> = left
            .items
            .iter()
            .take(5)
            .map(|d| format!("{} {}", d.pos, describe_keys(&d.val)))
            .collect();
        let more = if left.items.len() > 5 { ", ..." } else { "" };
        format!(
            "(compared {} documents [{}{more}] with {})",
            left.items.len(),
            docs.join("; "),
            describe_matcher(&matcher)
        )
    } else {
        String::new()
    };
    m.expects.check(&poss, &what, c)?;
    Ok(idxs)
}

fn apply_docset(
    left: &mut Node,
    right: &Node,
    defaults: &Expects,
    c: &mut dyn Caller,
) -> Result<(), OverlayError> {
    for doc in &right.items {
        apply_doc(left, doc, defaults, c).map_err(|e| OverlayError {
            message: format!("Document on line {}: {}", doc.pos, e.message),
            conditional: false,
        })?;
    }
    Ok(())
}

fn apply_doc(
    left: &mut Node,
    doc: &Node,
    defaults: &Expects,
    c: &mut dyn Caller,
) -> Result<(), OverlayError> {
    apply_to_items(left, doc, defaults, c, Items::DocumentSet)
}

/// What an overlay node is applied to: the items of a map or an array, or
/// the documents of a document set. The operations are the same; the
/// matching differs, an unmatched map or array item merge appends while a
/// document merge does not, and map items cannot be inserted or appended.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Items {
    Map,
    Array,
    DocumentSet,
}

fn apply_to_items(
    l: &mut Node,
    item: &Node,
    defaults: &Expects,
    c: &mut dyn Caller,
    kind: Items,
) -> Result<(), OverlayError> {
    let indexes = |l: &Node, c: &mut dyn Caller| match kind {
        Items::Map => map_indexes(l, item, defaults, c),
        Items::Array => array_indexes(l, item, defaults, c),
        Items::DocumentSet => doc_indexes(l, item, defaults, c),
    };
    let op = which_op(item)?;
    match op {
        Op::Merge => {
            let cd = child_defaults(item, defaults)?;
            let Some(idxs) = skip_conditional(indexes(l, c))? else {
                return Ok(());
            };
            if idxs.is_empty() && kind != Items::DocumentSet {
                let mut n = item.clone();
                strip_overlay_anns(&mut n);
                l.items.push(n);
                return Ok(());
            }
            for i in idxs {
                let replace = if !l.items[i].val.is_null() {
                    apply(&mut l.items[i].val, &item.val, &cd, c)?
                } else {
                    true
                };
                if replace {
                    let mut v = item.val.clone();
                    strip_overlay_anns_val(&mut v);
                    l.items[i].val = v;
                    if kind != Items::DocumentSet {
                        l.items[i].pos = item.pos.clone();
                    }
                }
            }
        }
        Op::Remove => {
            let Some(idxs) = skip_conditional(indexes(l, c))? else {
                return Ok(());
            };
            let mut k = 0;
            l.items.retain(|_| {
                let keep = !idxs.contains(&k);
                k += 1;
                keep
            });
        }
        Op::Replace => {
            let or_add = replace_or_add(item)?;
            let Some(idxs) = skip_conditional(indexes(l, c))? else {
                return Ok(());
            };
            for &i in &idxs {
                let v = replace_value(item, Some(&l.items[i]), c)?;
                let mut n = item.clone();
                strip_overlay_anns(&mut n);
                n.val = v;
                l.items[i] = n;
            }
            if idxs.is_empty() && or_add {
                let v = replace_value(item, None, c)?;
                let mut n = item.clone();
                strip_overlay_anns(&mut n);
                n.val = v;
                l.items.push(n);
            }
        }
        Op::Insert | Op::Append if kind == Items::Map => {
            let name = if op == Op::Insert {
                "overlay/insert"
            } else {
                "overlay/append"
            };
            return Err(oerr(format!(
                "Found @{name} on map item ({}); only array items can be annotated with @{name}",
                item.pos
            )));
        }
        Op::Insert => {
            let Some(idxs) = skip_conditional(indexes(l, c))? else {
                return Ok(());
            };
            let (before, after) = insert_where(item)?;
            let mut out = Vec::new();
            for (i, li) in std::mem::take(&mut l.items).into_iter().enumerate() {
                if idxs.contains(&i) {
                    let n = insert_value(item, &li, c)?;
                    if before {
                        out.push(n.clone());
                    }
                    out.push(li);
                    if after {
                        out.push(n);
                    }
                } else {
                    out.push(li);
                }
            }
            l.items = out;
        }
        Op::Append => {
            let mut n = item.clone();
            strip_overlay_anns(&mut n);
            l.items.push(n);
        }
        Op::Assert => {
            let cd = child_defaults(item, defaults)?;
            let Some(idxs) = skip_conditional(indexes(l, c))? else {
                return Ok(());
            };
            for i in idxs {
                assert_check(item, &l.items[i], c)?;
                let mut copy = l.items[i].val.clone();
                apply(&mut copy, &item.val, &cd, c)?;
            }
        }
    }
    Ok(())
}

pub fn strip_overlay_anns(n: &mut Node) {
    n.anns.retain(|a| !a.name.starts_with("overlay/"));
    strip_overlay_anns_val(&mut n.val);
    for i in &mut n.items {
        strip_overlay_anns(i);
    }
}

pub fn strip_overlay_anns_val(v: &mut Val) {
    if let Val::Node(n) = v {
        strip_overlay_anns(n);
    }
}

/// `@overlay/match-child-defaults` of a document (for its children).
pub fn doc_child_defaults(doc: &Node) -> Result<Expects, OverlayError> {
    child_defaults(doc, &Expects::default())
}

/// Applies one overlay value onto another: the entry point for data values.
pub fn apply_top(left: &mut Val, right: &Val, c: &mut dyn Caller) -> Result<(), OverlayError> {
    let replace = apply(left, right, &Expects::default(), c)?;
    if replace {
        let mut v = right.clone();
        strip_overlay_anns_val(&mut v);
        *left = v;
    }
    Ok(())
}
