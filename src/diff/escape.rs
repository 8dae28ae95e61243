//! Escaping for every user-controlled name (targets, files, objects, lint
//! messages) that goes into Markdown or HTML: the PR comment, the job
//! summary and `diff --format markdown`. A name comes from a PR and may hold
//! a newline followed by `<!--`, which would hide the rest of the comment,
//! or `</code></summary>`, `@someone` or `[link](…)`.
//! Diff bodies are not escaped here: they go into fences (`render::fence`),
//! which show their control and bidirectional characters as escapes.

/// Control characters made visible as escapes (`\n`, `\u{1b}`), so that no
/// name can end a line (and so a Markdown block or an HTML element), nor
/// reorder the comment's text with a bidirectional control (`\u{202e}`).
fn visible_controls(s: &str, out: &mut String, each: impl Fn(char, &mut String)) {
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if crate::diagnostics::must_escape(c) => {
                out.push_str(&format!("\\u{{{:x}}}", c as u32))
            }
            c => each(c, out),
        }
    }
}

/// Text for inside a Markdown code span (`` `…` ``): one line, no backtick.
pub fn code(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    visible_controls(s, &mut out, |c, out| {
        out.push(if c == '`' { '\'' } else { c });
    });
    out
}

/// Text for inside an HTML element (`<code>…</code>` in a `<summary>`).
pub fn html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    visible_controls(s, &mut out, |c, out| match c {
        '&' => out.push_str("&amp;"),
        '<' => out.push_str("&lt;"),
        '>' => out.push_str("&gt;"),
        '"' => out.push_str("&quot;"),
        '\'' => out.push_str("&#39;"),
        c => out.push(c),
    });
    out
}

/// Running Markdown text in the middle of a line (a lint message):
/// HTML-escaped, and the punctuation Markdown reads there (code, emphasis,
/// links, images, strike-through, mentions) backslash-escaped, so it shows
/// as typed.
pub fn text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    visible_controls(s, &mut out, |c, out| match c {
        '&' => out.push_str("&amp;"),
        '<' => out.push_str("&lt;"),
        '>' => out.push_str("&gt;"),
        '\\' | '`' | '*' | '_' | '[' | ']' | '!' | '~' | '@' => {
            out.push('\\');
            out.push(c);
        }
        c => out.push(c),
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOSTILE: &str = "a\n<!--\n`x` </code></summary> @bob [l](http://x) & \u{1b}[31m";

    #[test]
    fn nothing_ends_a_line_or_opens_markup() {
        for out in [code(HOSTILE), html(HOSTILE), text(HOSTILE)] {
            assert!(!out.contains('\n') && !out.contains('\u{1b}'), "{out}");
            assert!(out.contains("\\n"), "{out}");
        }
        assert!(!code(HOSTILE).contains('`'));
        let h = html(HOSTILE);
        assert!(!h.contains('<') && !h.contains('>'), "{h}");
        assert!(h.contains("&lt;!--"), "{h}");
        let t = text(HOSTILE);
        assert!(
            !t.contains('<') && t.contains("\\@bob") && t.contains("\\[l\\]"),
            "{t}"
        );
    }

    /// A target or file name a pull request chose cannot reorder the
    /// comment's text with a bidirectional control (re-probe 18).
    #[test]
    fn bidirectional_controls_are_visible() {
        let name = "prod\u{202E}lmy.terces\u{2066}";
        for out in [code(name), html(name), text(name)] {
            assert!(
                out.contains("\\u{202e}") && out.contains("\\u{2066}") && !out.contains('\u{202E}'),
                "{out}"
            );
        }
    }

    #[test]
    fn ordinary_names_are_unchanged() {
        assert_eq!(code("Deployment/web/web"), "Deployment/web/web");
        assert_eq!(html("prod-eu.1"), "prod-eu.1");
    }
}
