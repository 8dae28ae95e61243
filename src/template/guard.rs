//! Limits for the Starlark code of templates (issue 19: no input may hang
//! strata, crash it or take unbounded memory). The Starlark parser and
//! compiler recurse once per level of an expression, so a deep one
//! (`[[[[...]]]]`, `1+1+1+...`, `------1`) overflows the stack: code is
//! measured before it is parsed. Evaluation runs under a step and heap
//! budget checked before every statement, so an endless loop or a value
//! doubled in a loop ends in an error.

use starlark::codemap::FileSpanRef;
use starlark::eval::{BeforeStmtFunc, BeforeStmtFuncDyn, Evaluator};

/// Deepest expression or block nesting accepted (an estimate that errs on
/// the deep side: every operator of a chain counts as one level).
pub const MAX_CODE_DEPTH: usize = 512;
/// Statements one evaluation may execute.
pub const MAX_STEPS: u64 = 100_000_000;
/// Bytes the Starlark heap of one evaluation may hold.
pub const MAX_HEAP_BYTES: usize = 256 << 20;

/// Refuses code nested deeper than [`MAX_CODE_DEPTH`]: brackets, operator
/// chains (`a + b + c` is as deep as it has operators) and indented blocks.
/// String literals and comments are skipped.
pub fn check_depth(code: &str) -> Result<(), String> {
    // One entry per open bracket: operators counted in its current segment.
    let mut levels: Vec<usize> = vec![0];
    let mut indents: Vec<usize> = Vec::new();
    let mut line = 1usize;
    let b = code.as_bytes();
    let mut i = 0;
    let mut at_line_start = true;
    let too_deep = |line: usize| {
        Err(format!(
            "line {line}: code nested deeper than {MAX_CODE_DEPTH} levels (brackets, operators in one expression, or blocks): split it up"
        ))
    };
    while i < b.len() {
        let c = b[i];
        if at_line_start && levels.len() == 1 {
            let start = i;
            while i < b.len() && (b[i] == b' ' || b[i] == b'\t') {
                i += 1;
            }
            if i < b.len() && b[i] != b'\n' && b[i] != b'#' && b[i] != b'\r' {
                let indent = i - start;
                while indents.last().is_some_and(|&top| top > indent) {
                    indents.pop();
                }
                if indents.last().is_none_or(|&top| top < indent) {
                    indents.push(indent);
                }
                if indents.len() > MAX_CODE_DEPTH {
                    return too_deep(line);
                }
            }
            at_line_start = false;
            continue;
        }
        match c {
            b'\n' => {
                line += 1;
                at_line_start = true;
                if levels.len() == 1 {
                    levels[0] = 0;
                }
            }
            b'#' => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'"' | b'\'' => {
                let triple = b.len() >= i + 3 && b[i + 1] == c && b[i + 2] == c;
                i += if triple { 3 } else { 1 };
                while i < b.len() {
                    if b[i] == b'\\' {
                        i += 2;
                        continue;
                    }
                    if b[i] == b'\n' {
                        line += 1;
                        if !triple {
                            break;
                        }
                    }
                    if b[i] == c
                        && (!triple || (b.len() >= i + 3 && b[i + 1] == c && b[i + 2] == c))
                    {
                        i += if triple { 3 } else { 1 };
                        break;
                    }
                    i += 1;
                }
                continue;
            }
            b'(' | b'[' | b'{' => levels.push(0),
            b')' | b']' | b'}' if levels.len() > 1 => {
                levels.pop();
            }
            b',' | b':' | b';' => {
                if let Some(top) = levels.last_mut() {
                    *top = 0;
                }
            }
            b'+' | b'-' | b'*' | b'/' | b'%' | b'&' | b'|' | b'^' | b'<' | b'>' | b'=' | b'!'
            | b'~' | b'.' => {
                if let Some(top) = levels.last_mut() {
                    *top += 1;
                }
            }
            c if c.is_ascii_alphabetic() || c == b'_' => {
                let start = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
                if matches!(
                    &code[start..i],
                    "and" | "or" | "not" | "if" | "else" | "in" | "lambda" | "for"
                ) {
                    if let Some(top) = levels.last_mut() {
                        *top += 1;
                    }
                }
                if depth(&levels, &indents) > MAX_CODE_DEPTH {
                    return too_deep(line);
                }
                continue;
            }
            _ => {}
        }
        if depth(&levels, &indents) > MAX_CODE_DEPTH {
            return too_deep(line);
        }
        i += 1;
    }
    Ok(())
}

fn depth(levels: &[usize], indents: &[usize]) -> usize {
    levels.len() + levels.iter().sum::<usize>() + indents.len()
}

/// Installs the step and heap budget on an evaluator. starlark 0.14 has no
/// public budget API; its statement hook (`before_stmt_for_dap`, public but
/// doc-hidden, made for debuggers) is the one place that can stop a run.
pub fn limit(eval: &mut Evaluator<'_, '_, '_>) {
    eval.before_stmt_for_dap(BeforeStmtFunc::from_dyn(Box::new(Budget { steps: 0 })));
}

struct Budget {
    steps: u64,
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct LimitError(String);

impl<'e> BeforeStmtFuncDyn<'e> for Budget {
    fn call<'v>(
        &mut self,
        _span: FileSpanRef,
        _continued: bool,
        eval: &mut Evaluator<'v, '_, 'e>,
    ) -> starlark::Result<()> {
        self.steps += 1;
        if self.steps > MAX_STEPS {
            return Err(starlark::Error::new_other(LimitError(format!(
                "the template ran more than {MAX_STEPS} statements (an endless loop?)"
            ))));
        }
        // The heap only grows between collections; checking it every
        // statement is a cheap read.
        let bytes = eval.heap().allocated_bytes();
        if bytes > MAX_HEAP_BYTES {
            return Err(starlark::Error::new_other(LimitError(format!(
                "the template's values take more than {MAX_HEAP_BYTES} bytes: build smaller values"
            ))));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deep_code_is_refused_and_ordinary_code_passes() {
        for deep in [
            format!("x = {}1{}", "[".repeat(5000), "]".repeat(5000)),
            format!("x = 1{}", "+1".repeat(5000)),
            format!("x = {}1", "-".repeat(5000)),
            format!("x = {}", "not ".repeat(5000) + "True"),
            (0..600)
                .map(|d| format!("{}if True:\n", " ".repeat(d)))
                .collect::<String>()
                + &" ".repeat(600)
                + "pass\n",
        ] {
            let e = check_depth(&deep).unwrap_err();
            assert!(e.contains("nested deeper than 512"), "{e}");
        }
        let ok = "def f(a, b):\n  if a and not b:\n    return [x + 1 for x in range(10) if x % 2 == 0]\n  end\n  return {'k': \"v[(\", 'n': a.b.c}\nend\n# ((((((\ns = '''\n((((\n'''\n";
        assert_eq!(check_depth(ok), Ok(()));
        // Long flat lists and many statements are not deep.
        let wide = format!("x = [{}]\n", vec!["1 + 1"; 20_000].join(", "));
        assert_eq!(check_depth(&wide), Ok(()));
        let long: String = (0..20_000).map(|i| format!("v{i} = {i} + 1\n")).collect();
        assert_eq!(check_depth(&long), Ok(()));
    }
}
