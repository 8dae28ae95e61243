//! A small JSON Schema validator for `kap.jsonschema()`: the keywords
//! manifests use (`type`, `properties`, `required`, `additionalProperties`,
//! `items`, `enum`, `const`, `minimum`/`maximum`, `minLength`/`maxLength`,
//! `minItems`/`maxItems`, `pattern`). Kapitan returns the Python
//! `jsonschema` message as `reason`; strata returns its own wording.

use crate::value::Value;

fn num(v: &Value) -> Option<f64> {
    match v {
        Value::Int(i) => Some(*i as f64),
        Value::Float(f) => Some(*f),
        _ => None,
    }
}

fn type_matches(v: &Value, t: &str) -> bool {
    match t {
        "object" => matches!(v, Value::Map(_)),
        "array" => matches!(v, Value::List(_)),
        "string" => matches!(v, Value::String(_)),
        "boolean" => matches!(v, Value::Bool(_)),
        "null" => v.is_null(),
        "number" => num(v).is_some(),
        "integer" => match v {
            Value::Int(_) => true,
            Value::Float(f) => f.fract() == 0.0,
            _ => false,
        },
        _ => true,
    }
}

fn short(v: &Value) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

/// Ok, or the first violation found.
pub fn validate(v: &Value, schema: &Value) -> Result<(), String> {
    let Some(s) = schema.as_map() else {
        return Ok(());
    };
    if let Some(t) = s.get("type") {
        let ok = match t {
            Value::String(t) => type_matches(v, t),
            Value::List(ts) => ts
                .iter()
                .filter_map(Value::as_str)
                .any(|t| type_matches(v, t)),
            _ => true,
        };
        if !ok {
            return Err(format!("{} is not of type {}", short(v), short(t)));
        }
    }
    if let Some(Value::List(options)) = s.get("enum") {
        if !options.contains(v) {
            return Err(format!(
                "{} is not one of {}",
                short(v),
                short(&Value::List(options.clone()))
            ));
        }
    }
    if let Some(c) = s.get("const") {
        if c != v {
            return Err(format!("{} was expected", short(c)));
        }
    }
    if let Some(n) = num(v) {
        if let Some(min) = s.get("minimum").and_then(num) {
            if n < min {
                return Err(format!("{} is less than the minimum of {}", short(v), min));
            }
        }
        if let Some(max) = s.get("maximum").and_then(num) {
            if n > max {
                return Err(format!(
                    "{} is greater than the maximum of {}",
                    short(v),
                    max
                ));
            }
        }
    }
    if let Value::String(st) = v {
        let len = st.chars().count() as f64;
        if s.get("minLength").and_then(num).is_some_and(|m| len < m) {
            return Err(format!("{} is too short", short(v)));
        }
        if s.get("maxLength").and_then(num).is_some_and(|m| len > m) {
            return Err(format!("{} is too long", short(v)));
        }
        if let Some(p) = s.get("pattern").and_then(Value::as_str) {
            if let Ok(re) = regex::Regex::new(p) {
                if !re.is_match(st) {
                    return Err(format!(
                        "{} does not match {}",
                        short(v),
                        short(&Value::String(p.into()))
                    ));
                }
            }
        }
    }
    if let Value::List(items) = v {
        let len = items.len() as f64;
        if s.get("minItems").and_then(num).is_some_and(|m| len < m) {
            return Err(format!("{} is too short", short(v)));
        }
        if s.get("maxItems").and_then(num).is_some_and(|m| len > m) {
            return Err(format!("{} is too long", short(v)));
        }
        if let Some(item_schema) = s.get("items") {
            for item in items {
                validate(item, item_schema)?;
            }
        }
    }
    if let Value::Map(m) = v {
        if let Some(Value::List(req)) = s.get("required") {
            for r in req.iter().filter_map(Value::as_str) {
                if !m.contains_key(r) {
                    return Err(format!("'{r}' is a required property"));
                }
            }
        }
        let props = s.get("properties").and_then(Value::as_map);
        for (k, item) in m {
            match props.and_then(|p| p.get(k)) {
                Some(ps) => validate(item, ps)?,
                None => match s.get("additionalProperties") {
                    Some(Value::Bool(false)) => {
                        return Err(format!(
                            "Additional properties are not allowed ('{k}' was unexpected)"
                        ))
                    }
                    Some(extra @ Value::Map(_)) => validate(item, extra)?,
                    _ => {}
                },
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn j(s: &str) -> Value {
        Value::from_json(&serde_json::from_str(s).unwrap())
    }

    #[test]
    fn validates_common_keywords() {
        let schema = j(
            r#"{"type":"object","required":["a"],"properties":{"a":{"type":"integer","minimum":1}}}"#,
        );
        assert!(validate(&j(r#"{"a":2}"#), &schema).is_ok());
        assert!(validate(&j(r#"{"a":0}"#), &schema)
            .unwrap_err()
            .contains("minimum"));
        assert!(validate(&j(r#"{}"#), &schema)
            .unwrap_err()
            .contains("required"));
    }
}
