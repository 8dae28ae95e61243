//! Limits for the Starlark code of templates (issue 19: no input may hang
//! strata, crash it or take unbounded memory). The Starlark parser and
//! compiler recurse once per level of an expression, so a deep one
//! (`[[[[...]]]]`, `1+1+1+...`, `------1`) overflows the stack: code is
//! measured before it is parsed. Evaluation runs under a step and heap
//! budget checked before every statement, so an endless loop or a value
//! doubled in a loop ends in an error. One statement can still build a
//! huge value at once (`"x" * 2000000000`, or a comprehension): `*` and
//! `*=` go through [`MUL`], which measures a repetition before it is made,
//! and starlark's own heap and tick limits stop a comprehension after at
//! most 1,000 iterations past the budget.

use starlark::codemap::FileSpanRef;
use starlark::environment::GlobalsBuilder;
use starlark::eval::{BeforeStmtFunc, BeforeStmtFuncDyn, Evaluator};
use starlark::starlark_module;
use starlark::syntax::ast::{AssignOp, AssignTargetP, AstStmt, ExprP, StmtP};
use starlark::syntax::{AstModule, Dialect};
use starlark::values::range::Range;
use starlark::values::Value;
use std::collections::HashMap;
use std::num::NonZeroI32;

/// Deepest expression or block nesting accepted (an estimate that errs on
/// the deep side: every operator of a chain counts as one level).
pub const MAX_CODE_DEPTH: usize = 512;
/// Statements one evaluation may execute.
pub const MAX_STEPS: u64 = 100_000_000;
/// Calls and loop iterations (starlark's ticks) one evaluation may make:
/// above [`MAX_STEPS`], so a loop of statements meets the statement budget
/// (whose message says what it is) first; this one stops comprehensions.
pub const MAX_TICKS: u64 = 2 * MAX_STEPS;
/// Bytes the Starlark heap of one evaluation may hold: small enough that
/// the deepest value a loop can build in it (about 1,300,000 nested tuples)
/// is collected and printed within the evaluation thread's stack (tuples
/// overflowed 1 GiB from 3,000,000, which a 256 MiB heap allowed).
pub const MAX_HEAP_BYTES: usize = 64 << 20;
/// Elements a `range` may have: `list(range(2000000000))` is one native call
/// that no statement or tick budget sees, and would take 16 GB.
pub const MAX_RANGE: u64 = 10_000_000;

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
    let timeout = crate::limits::eval_timeout();
    let clock = crate::limits::eval_clock();
    eval.before_stmt_for_dap(BeforeStmtFunc::from_dyn(Box::new(Budget {
        steps: 0,
        outside_base: outside(),
        deadline: clock.deadline(),
        timeout,
        clock,
    })));
    // Checked by starlark every 1,000 calls or loop iterations, inside
    // expressions too (comprehensions), where the statement hook never runs.
    // Both only fail when set twice on one evaluator, which `limit` never does.
    let _ = eval.set_max_heap_size(MAX_HEAP_BYTES);
    let _ = eval.set_max_tick_count(MAX_TICKS);
}

/// strata's message for starlark's own heap and tick limit errors, which
/// otherwise speak of spans that "may not be informative".
pub fn limit_message(kind: &str) -> Option<String> {
    if kind.contains("Heap memory limit of") {
        Some(format!(
            "the template's values take more than {MAX_HEAP_BYTES} bytes: build smaller values"
        ))
    } else if kind.contains("Execution duration limit of") {
        Some(format!(
            "the template made more than {MAX_TICKS} calls or loop iterations (an endless loop?)"
        ))
    } else {
        None
    }
}

/// The native `*` and `*=` are rewritten to: a repetition (`"x" * n`,
/// `[v] * n`) is measured before it is built.
pub const MUL: &str = "__strata_mul";

/// Parses template code with every `*` and `*=` going through [`MUL`].
/// `x *= e` becomes `x = MUL(x, (e))` (starlark's `*=` is `x = x * e`, never
/// in place); a target whose index or attribute expression calls a function
/// keeps its native `*=`, as rewriting it would call the function twice.
pub fn parse(path: &str, code: &str, dialect: &Dialect) -> starlark::Result<AstModule> {
    let ast = AstModule::parse(path, code.to_string(), dialect)?;
    let mut edits: Vec<(usize, usize, String)> = Vec::new();
    collect_mul_assign(ast.statement(), code, &mut edits);
    let mut ast = if edits.is_empty() {
        ast
    } else {
        let mut text = code.to_string();
        edits.sort_by_key(|e| std::cmp::Reverse(e.0));
        for (begin, end, with) in edits {
            text.replace_range(begin..end, &with);
        }
        AstModule::parse(path, text, dialect)?
    };
    ast.replace_binary_operators(&HashMap::from([("*".to_string(), MUL.to_string())]));
    Ok(ast)
}

fn collect_mul_assign(stmt: &AstStmt, code: &str, edits: &mut Vec<(usize, usize, String)>) {
    if let StmtP::AssignModify(lhs, AssignOp::Multiply, rhs) = &stmt.node {
        let calls = match &lhs.node {
            AssignTargetP::Identifier(_) => false,
            AssignTargetP::Index(b) => has_call(&b.0) || has_call(&b.1),
            AssignTargetP::Dot(e, _) => has_call(e),
            AssignTargetP::Tuple(_) => true,
        };
        let text =
            |s: starlark::codemap::Span| code.get(s.begin().get() as usize..s.end().get() as usize);
        if let (false, Some(l), Some(r)) = (calls, text(lhs.span), text(rhs.span)) {
            edits.push((
                stmt.span.begin().get() as usize,
                stmt.span.end().get() as usize,
                format!("{l} = {MUL}({l}, ({r}))"),
            ));
        }
        return;
    }
    stmt.visit_stmt(|s| collect_mul_assign(s, code, edits));
}

fn has_call(e: &starlark::syntax::ast::AstExpr) -> bool {
    if matches!(e.node, ExprP::Call(..)) {
        return true;
    }
    let mut found = false;
    e.visit_expr(|x| found |= has_call(x));
    found
}

/// Bytes a repetition of `seq` by `n` would add: the text of a string, one
/// pointer per element of a list or tuple; `None` for anything else.
fn repeat_bytes(seq: Value, n: Value) -> Option<u64> {
    let n = u64::try_from(n.unpack_i32()?).ok()?;
    let each = match seq.get_type() {
        "string" => seq.unpack_str()?.len() as u64,
        "list" | "tuple" => seq.length().ok()? as u64 * 8,
        _ => return None,
    };
    Some(each.saturating_mul(n))
}

#[starlark_module]
pub fn natives(builder: &mut GlobalsBuilder) {
    /// starlark's `range`, refused past [`MAX_RANGE`] elements.
    fn range(
        #[starlark(require = pos)] a1: i32,
        #[starlark(require = pos)] a2: Option<i32>,
        #[starlark(require = pos, default = 1)] step: i32,
    ) -> anyhow::Result<Range> {
        let (start, stop) = match a2 {
            None => (0, a1),
            Some(stop) => (a1, stop),
        };
        let Some(step) = NonZeroI32::new(step) else {
            return Err(anyhow::anyhow!(
                "Third argument of range (step) cannot be zero"
            ));
        };
        let (lo, hi, by) = (start as i64, stop as i64, step.get() as i64);
        let (span, by) = if by > 0 {
            (hi - lo, by)
        } else {
            (lo - hi, -by)
        };
        let len = (span.max(0) as u64).div_ceil(by as u64);
        if len > MAX_RANGE {
            return Err(anyhow::anyhow!(LimitError(format!(
                "range() of {len} elements: templates may use at most {MAX_RANGE}"
            ))));
        }
        Ok(Range::new(start, stop, step))
    }

    fn __strata_mul<'v>(
        a: Value<'v>,
        b: Value<'v>,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> starlark::Result<Value<'v>> {
        let heap = eval.heap();
        if let Some(more) = repeat_bytes(a, b).or_else(|| repeat_bytes(b, a)) {
            if (heap.allocated_bytes() as u64).saturating_add(more) > MAX_HEAP_BYTES as u64 {
                return Err(starlark::Error::new_other(LimitError(format!(
                    "the template's values take more than {MAX_HEAP_BYTES} bytes: build smaller values"
                ))));
            }
        }
        a.mul(b, heap)
    }
}

thread_local! {
    /// Bytes of YAML trees built outside the Starlark heap on this thread
    /// (fragments a function or `overlay.apply` returned, values copied
    /// into the template): the heap does not see them and, as it frees
    /// nothing during an evaluation, they add up like its own values.
    static OUTSIDE: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Counts `bytes` of a tree built outside the heap against the heap limit
/// of the evaluations running on this thread.
pub fn charge_outside(bytes: usize) {
    OUTSIDE.with(|c| c.set(c.get().saturating_add(bytes as u64)));
}

fn outside() -> u64 {
    OUTSIDE.with(|c| c.get())
}

struct Budget {
    steps: u64,
    /// [`outside`] when the evaluation started.
    outside_base: u64,
    /// When the evaluation stops (`STRATA_EVAL_TIMEOUT`): a statement may
    /// cost the size of a string (`s.find(x)` of 1 MB in a loop ran for
    /// hours within the statement budget). Read every 256 statements.
    deadline: Option<std::time::Instant>,
    timeout: std::time::Duration,
    /// Counts the evaluation against the run's budget until the evaluator
    /// (which owns this) is dropped.
    clock: crate::limits::EvalClock,
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
        if self.steps.is_multiple_of(256)
            && self
                .deadline
                .is_some_and(|d| std::time::Instant::now() >= d)
        {
            if self.clock.by_run() {
                return Err(starlark::Error::new_other(LimitError(
                    crate::limits::run_eval_message(),
                )));
            }
            return Err(starlark::Error::new_other(LimitError(format!(
                "the template ran for more than {} s and was stopped (an endless or quadratic loop?): raise STRATA_EVAL_TIMEOUT (seconds) if it needs longer",
                self.timeout.as_secs()
            ))));
        }
        // The heap only grows between collections; checking it every
        // statement is a cheap read.
        let bytes = (eval.heap().allocated_bytes() as u64)
            .saturating_add(outside().saturating_sub(self.outside_base));
        if bytes > MAX_HEAP_BYTES as u64 {
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
    use starlark::environment::Module;

    /// The repr of the module's last expression, or the error's text.
    fn run(code: &str) -> Result<String, String> {
        let mut b = GlobalsBuilder::standard();
        natives(&mut b);
        let globals = b.build();
        let ast = parse("t.star", code, &Dialect::Extended).map_err(|e| e.to_string())?;
        Module::with_temp_heap(|module| {
            let mut eval = Evaluator::new(&module);
            limit(&mut eval);
            eval.eval_module(ast, &globals)
                .map(|v| v.to_repr())
                .map_err(|e| e.to_string())
        })
    }

    #[test]
    fn repetition_and_range_keep_their_meaning() {
        let cases = [
            ("3 * 7", "21"),
            ("'ab' * 3", "\"ababab\""),
            ("2 * 'c'", "\"cc\""),
            ("[1, 2] * 2", "[1, 2, 1, 2]"),
            ("(1,) * 2", "(1, 1)"),
            ("'x' * -1", "\"\""),
            ("1.5 * 2", "3.0"),
            ("x = 3\nx *= 2\nx", "6"),
            ("l = [1]\nm = l\nl *= 3\n[l, m]", "[[1, 1, 1], [1]]"),
            ("d = {'k': 'ab'}\nd['k'] *= 2\nd", "{\"k\": \"abab\"}"),
            ("list(range(3))", "[0, 1, 2]"),
            ("list(range(2, 10, 3))", "[2, 5, 8]"),
            ("list(range(10, 0, -4))", "[10, 6, 2]"),
            ("list(range(5, 1))", "[]"),
            ("len(range(10000000))", "10000000"),
        ];
        for (code, want) in cases {
            assert_eq!(run(code).as_deref(), Ok(want), "{code}");
        }
        assert!(run("range(1, 2, 0)")
            .unwrap_err()
            .contains("cannot be zero"));
        assert!(run("1 * None").unwrap_err().contains("not supported"));
    }

    #[test]
    fn one_statement_cannot_build_a_huge_value() {
        for code in [
            "'x' * 2000000000",
            "2000000000 * 'x'",
            "[0] * 1000000000",
            "s = 'xy'\ns *= 1000000000",
            "d = {'k': [0]}\nd['k'] *= 1000000000",
        ] {
            let e = run(code).unwrap_err();
            assert!(
                e.contains("values take more than 67108864 bytes"),
                "{code}: {e}"
            );
        }
        // Inside a comprehension, whichever check comes first.
        let e = run("[('x' * 1000000) for i in range(100000)]").unwrap_err();
        assert!(
            e.contains("values take more than 67108864 bytes")
                || e.contains("Heap memory limit of 67108864 bytes exceeded"),
            "{e}"
        );
        let e = run("list(range(2000000000))").unwrap_err();
        assert!(e.contains("range() of 2000000000 elements"), "{e}");
        // No `*` at all: starlark's own heap check, every 1,000 iterations.
        let e = run("s = 'x' * 100000\n[s + s for i in range(1000000)]").unwrap_err();
        assert!(e.contains("Heap memory limit"), "{e}");
    }

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
