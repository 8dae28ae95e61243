use jrsonnet_evaluator::{IStr, Result, Val, error, function::builtin};
use serde_saphyr::options;

#[builtin]
pub fn builtin_parse_json(str: IStr) -> Result<Val> {
	let value: Val = serde_json::from_str(&str).map_err(|e| error!("failed to parse json: {e}"))?;
	Ok(value)
}

/// strata: see `builtin_parse_yaml`.
#[allow(deprecated)]
fn yaml_budget() -> serde_saphyr::Budget {
	serde_saphyr::Budget {
		max_depth: 256,
		max_events: 100_000_000,
		max_nodes: 100_000_000,
		max_documents: 1_000_000,
		..serde_saphyr::Budget::default()
	}
}

#[builtin]
pub fn builtin_parse_yaml(str: IStr) -> Result<Val> {
	let needs_synthetic_null = str.trim_end().ends_with("\n---");

	let mut out = serde_saphyr::from_multiple_with_options::<Val>(
		&str,
		options! {
			// Golang/C++ compat
			legacy_octal_numbers: true,
			// strata: the input may come from a pull request. Nesting is
			// bounded (100,000 levels of `- ` overflowed the stack), at
			// strata's YAML limit; the other limits are the parser's
			// defaults, raised where they could refuse ordinary files.
			budget: Some(yaml_budget()),
			// strata: no source snippet in errors: the lines around the
			// error may hold a secret, and errors reach review logs.
			with_snippet: false,
		},
	)
	.map_err(|e| error!("failed to parse yaml: {e}"))?;

	// saphyr and other yaml implementations disagree on how to handle an empty document in multi-document stream.
	// Saphyr only considers document started after anything is emitted after the document delimiter
	if needs_synthetic_null {
		out.push(Val::Null);
	}

	Ok(if out.is_empty() {
		Val::Null
	} else if out.len() == 1 {
		out.into_iter().next().unwrap()
	} else {
		Val::Arr(out.into())
	})
}
