//! strata: a bound on how deeply a stored value nests.
//!
//! Printing, serialising, comparing and dropping a value recurse once per
//! level, so a loop that wraps a namespace attribute in a new map on every
//! turn (`{% set ns.v = {"a": ns.v} %}`, 100,000 turns in a 100-byte
//! template, well within the fuel) overflowed the thread's stack and
//! aborted the process. Values are checked where they are stored
//! (`{% set %}`, namespace attributes): the only places a value can outlive
//! one loop turn and so grow without bound. A namespace attribute may not
//! hold a namespace: namespaces are the only mutable values, and a chain of
//! them (`{% set st.cur.next = n %}{% set st.cur = n %}` in a loop) would
//! grow deep without any stored value being deep when stored.

use std::collections::HashMap;

use crate::error::{Error, ErrorKind};
use crate::value::namespace_object::Namespace;
use crate::value::{ObjectRepr, Value, ValueRepr};

/// How deeply a stored value may nest; the same bound as strata's other
/// values (YAML, inventory references, jsonnet output).
pub const MAX_VALUE_DEPTH: usize = 256;

/// An error when `v` nests deeper than [`MAX_VALUE_DEPTH`] (or holds
/// itself); shared parts are walked once per depth they are met at. For
/// values stored by code outside the VM (strata's mutable
/// lists): `no_namespace` refuses namespaces too, and `refuse` names any
/// other object that may not be held (its message becomes the error).
pub fn check_stored_value(
    v: &Value,
    no_namespace: bool,
    refuse: &dyn Fn(&Value) -> Option<&'static str>,
) -> Result<(), Error> {
    check_counted(v, no_namespace, refuse).map(drop)
}

/// [`check_stored_value`], returning how many values it walked (the VM
/// charges them as fuel: storing a list built by `l = l + [x]` in a loop
/// walks it each time).
pub fn check_counted(
    v: &Value,
    no_namespace: bool,
    refuse: &dyn Fn(&Value) -> Option<&'static str>,
) -> Result<u64, Error> {
    let ValueRepr::Object(_) = v.0 else {
        return Ok(0);
    };
    let mut walked: u64 = 0;
    // Object address -> the shallowest depth it was walked at.
    let mut seen: HashMap<usize, usize> = HashMap::new();
    let mut todo: Vec<(Value, usize)> = vec![(v.clone(), 1)];
    while let Some((v, depth)) = todo.pop() {
        walked += 1;
        let ValueRepr::Object(ref obj) = v.0 else {
            continue;
        };
        if depth > MAX_VALUE_DEPTH {
            return Err(Error::new(
                ErrorKind::InvalidOperation,
                format!(
                    "a value nested deeper than {MAX_VALUE_DEPTH} levels (or holding itself) cannot be stored"
                ),
            ));
        }
        if let Some(why) = refuse(&v) {
            return Err(Error::new(ErrorKind::InvalidOperation, why));
        }
        if no_namespace && obj.downcast_ref::<Namespace>().is_some() {
            return Err(Error::new(
                ErrorKind::InvalidOperation,
                "a namespace attribute cannot hold a namespace",
            ));
        }
        match seen.get(&obj.addr()) {
            Some(&d) if d <= depth => continue,
            _ => {
                seen.insert(obj.addr(), depth);
            }
        }
        match obj.repr() {
            ObjectRepr::Map => {
                if let Some(pairs) = obj.try_iter_pairs() {
                    todo.extend(pairs.map(|(_, value)| (value, depth + 1)));
                }
            }
            ObjectRepr::Seq => {
                if let Some(items) = obj.try_iter() {
                    todo.extend(items.map(|item| (item, depth + 1)));
                }
            }
            // An iterable of unknown length may be one-shot: walking it would
            // use it up. One of known length renders as a list.
            ObjectRepr::Iterable if obj.enumerator_len().is_some() => {
                if let Some(items) = obj.try_iter() {
                    todo.extend(items.map(|item| (item, depth + 1)));
                }
            }
            _ => {}
        }
    }
    Ok(walked)
}
