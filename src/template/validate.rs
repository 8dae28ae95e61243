//! Data value validations: `@assert/validate` on data values and
//! `@schema/validation` in the schema, run on the final data values.

use super::eval::AnnVal;
use super::node::{Ann, Kind, Pos, Val};
use super::overlay::{Arg, Caller};
use super::schema::{Field, Ty};

struct Invalid {
    path: String,
    from: Pos,
    violations: Vec<(String, String, Pos)>,
}

fn ann_arg(v: &AnnVal) -> Arg {
    match v {
        AnnVal::Data(d) => Arg::Plain(d.clone()),
        AnnVal::Func(f) => Arg::Kept(f.clone()),
        AnnVal::Matcher(_) | AnnVal::Other(_) => Arg::Val(Val::null()),
    }
}

struct Walk<'a> {
    caller: &'a mut dyn Caller,
    root: Val,
    out: Vec<Invalid>,
}

impl Walk<'_> {
    fn run(
        &mut self,
        ann: &Ann,
        value: &Val,
        parent: &Val,
        path: &str,
        from: &Pos,
    ) -> Result<(), String> {
        let args = vec![
            Arg::Val(value.clone()),
            Arg::Val(parent.clone()),
            Arg::Val(self.root.clone()),
            Arg::List(ann.args.iter().map(ann_arg).collect()),
            Arg::Dict(
                ann.kwargs
                    .iter()
                    .map(|(k, v)| (k.clone(), ann_arg(v)))
                    .collect(),
            ),
            Arg::Str(ann.pos.to_string()),
        ];
        let res = self.caller.call_helper("strata_validate", args)?;
        let Val::Node(m) = res else {
            return Err("internal: validation helper returned no map".into());
        };
        if let Some(e) = m.get("when_error") {
            let msg = match &e.val {
                Val::Scalar(s) => s.display(),
                _ => String::new(),
            };
            let at = if path.is_empty() { "(document)" } else { path };
            return Err(format!("Validating {at}: {msg}"));
        }
        if let Some(e) = m.get("error") {
            let msg = match &e.val {
                Val::Scalar(s) => s.display(),
                _ => String::new(),
            };
            let name = if ann.name == "schema/validation" {
                "schema/validation"
            } else {
                "assert/validate"
            };
            return Err(format!("Invalid @{name} annotation - {msg}"));
        }
        let mut inv = Invalid {
            path: if path.is_empty() {
                "(document)".into()
            } else {
                path.to_string()
            },
            from: from.clone(),
            violations: Vec::new(),
        };
        if let Some(v) = m.get("violations").and_then(|v| v.val.as_node()) {
            for it in &v.items {
                if let Some(pair) = it.val.as_node() {
                    let get = |i: usize| match pair.items.get(i).map(|x| &x.val) {
                        Some(Val::Scalar(s)) => s.display(),
                        _ => String::new(),
                    };
                    inv.violations.push((get(0), get(1), ann.pos.clone()));
                }
            }
        }
        if !inv.violations.is_empty() {
            self.out.push(inv);
        }
        Ok(())
    }

    fn node(
        &mut self,
        anns: &[Ann],
        value: &Val,
        parent: &Val,
        path: &str,
        from: &Pos,
        field: Option<&Field>,
    ) -> Result<(), String> {
        if let Some(a) = field.and_then(|f| f.validation.as_ref()) {
            self.run(a, value, parent, path, from)?;
        }
        for a in anns.iter().filter(|a| a.name == "assert/validate") {
            self.run(a, value, parent, path, from)?;
        }
        if let Val::Node(n) = value {
            match n.kind {
                Kind::Map => {
                    for it in &n.items {
                        let key = it.key.display();
                        let p = if path.is_empty() {
                            key.clone()
                        } else {
                            format!("{path}.{key}")
                        };
                        let f = match field.map(|f| &f.ty) {
                            Some(Ty::Map(items)) => {
                                items.iter().find(|(k, _)| k.same(&it.key)).map(|(_, f)| f)
                            }
                            _ => None,
                        };
                        self.node(&it.anns, &it.val, value, &p, &it.pos, f)?;
                    }
                }
                Kind::Array => {
                    for (i, it) in n.items.iter().enumerate() {
                        let p = format!("{path}[{i}]");
                        let f = match field.map(|f| &f.ty) {
                            Some(Ty::Array(f)) => Some(&**f),
                            _ => None,
                        };
                        self.node(&it.anns, &it.val, value, &p, &it.pos, f)?;
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }
}

/// Runs every validation; the error text lists each failing value.
pub fn validate(
    caller: &mut dyn Caller,
    values: &Val,
    doc_anns: &[Ann],
    doc_pos: &Pos,
    schema: Option<&Field>,
) -> Result<(), String> {
    let mut w = Walk {
        caller,
        root: values.clone(),
        out: Vec::new(),
    };
    w.node(doc_anns, values, &Val::null(), "", doc_pos, schema)
        .map_err(|e| format!("Validating final data values:\n{e}"))?;
    if w.out.is_empty() {
        return Ok(());
    }
    let mut msg = String::from("Validating final data values:\n");
    for inv in &w.out {
        msg.push_str(&format!("  {}\n    from: {}\n", inv.path, inv.from));
        for (desc, found, by) in &inv.violations {
            msg.push_str(&format!("    - must be: {desc} (by: {by})\n"));
            if !found.is_empty() {
                msg.push_str(&format!("      found: {found}\n"));
            }
        }
        msg.push('\n');
    }
    Err(msg)
}
