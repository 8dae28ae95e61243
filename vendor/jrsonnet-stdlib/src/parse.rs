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
	// strata: the parser takes a NUL byte for the end of the stream and
	// dropped what followed with no error (`std.parseYaml(importstr
	// 'v.yaml')` of `a: 1\n\0\nb: 2` was `{a: 1}`; verify25,
	// v-jsonnet-parseyaml-nul-truncates), as strata's own reader did before
	// it refused the character (probe 34, yaml-nul-byte-truncates).
	if let Some(at) = str.find('\0') {
		let line = str[..at].matches('\n').count() + 1;
		return Err(error!(
			"failed to parse yaml: a NUL byte on line {line}, which YAML does not allow (is this a binary file?)"
		));
	}
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
