//! Finding the class or target file that wrote a value the merge produced:
//! rendered parameters carry no file, so an error about one (an invalid
//! `kapitan.compile` entry) looks for it in the files the target read.

use crate::value::Value;
use crate::yaml::{Node, NodeValue};
use std::path::{Path, PathBuf};

/// The file and line of the `kapitan.compile` list item that rendered as
/// `entry` (the `field` key's line when given and present). An item is
/// recognised by its value, or, when references make it differ from what
/// was written, by the `field`'s value; files are searched in the order
/// given, and files that cannot be read or parsed are skipped.
pub fn compile_entry(
    files: &[&Path],
    entry: &Value,
    field: Option<&str>,
) -> Option<(PathBuf, usize)> {
    let wanted_field = field.and_then(|f| Some((f, entry.as_map()?.get(f)?)));
    let mut by_field = None;
    for file in files {
        let Ok(text) = std::fs::read_to_string(file) else {
            continue;
        };
        let Ok(docs) = crate::yaml::load_all(&text) else {
            continue;
        };
        for doc in &docs {
            let Some(NodeValue::Seq(items)) = child(doc, "parameters")
                .and_then(|p| child(p, "kapitan"))
                .and_then(|k| child(k, "compile"))
                .map(|n| &n.value)
            else {
                continue;
            };
            for item in items {
                let field_node = field.and_then(|f| key_of(item, f));
                let line = field_node.map(|(k, _)| k.line).unwrap_or(item.line);
                if item.to_value() == *entry {
                    return Some((file.to_path_buf(), line));
                }
                if let (None, Some((_, want)), Some((_, v))) = (&by_field, wanted_field, field_node)
                {
                    if v.to_value() == *want {
                        by_field = Some((file.to_path_buf(), line));
                    }
                }
            }
        }
    }
    by_field
}

/// The value of `key` in a mapping node (`~`/`=` prefixes ignored).
fn child<'n>(node: &'n Node, key: &str) -> Option<&'n Node> {
    key_of(node, key).map(|(_, v)| v)
}

/// The key and value nodes of `key` in a mapping node (`~`/`=` prefixes
/// ignored).
pub(crate) fn key_of<'n>(node: &'n Node, key: &str) -> Option<(&'n Node, &'n Node)> {
    let NodeValue::Map(entries) = &node.value else {
        return None;
    };
    entries
        .iter()
        .find(|(k, _)| k.key_string().trim_start_matches(['~', '=']) == key)
        .map(|(k, v)| (k, v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_item_by_value_then_by_field() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.yml");
        let b = dir.path().join("b.yml");
        std::fs::write(&a, "parameters:\n  kapitan:\n    compile:\n    - input_type: jsonnet\n      output_path: x\n").unwrap();
        std::fs::write(&b, "classes: [a]\nparameters:\n  kapitan:\n    ~compile:\n    - output_path: ${p}\n      input_type: jsonet\n").unwrap();
        let files = [a.as_path(), b.as_path()];
        let entry = |it: &str, out: &str| {
            let mut m = crate::value::Map::default();
            m.insert("input_type".into(), Value::String(it.into()));
            m.insert("output_path".into(), Value::String(out.into()));
            Value::Map(m)
        };
        assert_eq!(
            compile_entry(&files, &entry("jsonnet", "x"), Some("input_type")),
            Some((a.clone(), 4))
        );
        // `${p}` rendered: found by the field named in the error.
        assert_eq!(
            compile_entry(&files, &entry("jsonet", "out"), Some("input_type")),
            Some((b.clone(), 6))
        );
        assert_eq!(compile_entry(&files, &entry("jsonet", "out"), None), None);
    }
}
