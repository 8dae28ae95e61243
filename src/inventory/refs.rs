//! Parsing of reclass reference strings (`${a:b}`, nested `${a:${b}}`,
//! escapes `\${`, `\\${`, `\}`, `\$[`) into token templates, following
//! reclass-rs's grammar exactly so that odd strings read the same way.

/// One piece of a string with references.
#[derive(Debug, Clone, PartialEq)]
pub enum Token {
    Lit(String),
    /// A reference; its path is the concatenation of its tokens (which may
    /// hold nested references).
    Ref(Vec<Token>),
}

/// A parsed string: literal text and references in order.
#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    pub tokens: Vec<Token>,
}

impl Template {
    /// True when the whole string is exactly one reference, whose value
    /// then keeps its type (a map stays a map).
    pub fn is_single_ref(&self) -> bool {
        matches!(self.tokens.as_slice(), [Token::Ref(_)])
    }
}

/// Parses `s`; `Ok(None)` when it holds no reference syntax at all and is a
/// plain string (the common case, decided without allocating).
pub fn parse(s: &str) -> Result<Option<Template>, String> {
    if !s.contains("${") && !s.contains("$[") {
        return Ok(None);
    }
    let b = s.as_bytes();
    let mut p = Parser { s, b, i: 0 };
    let tokens = p.outer()?;
    if tokens.iter().all(|t| matches!(t, Token::Lit(_))) {
        // Only escapes: still a template so the unescaped text is used.
        return Ok(Some(Template { tokens }));
    }
    Ok(Some(Template { tokens }))
}

/// How deep `${` may nest inside one reference: the parser and the
/// resolver recurse once per level, so a string of 30,000 `${` would
/// otherwise overflow the stack.
pub const MAX_REF_NESTING: usize = super::resolve::MAX_DEPTH;

struct Parser<'a> {
    s: &'a str,
    b: &'a [u8],
    i: usize,
}

fn push_lit(tokens: &mut Vec<Token>, text: &str) {
    if text.is_empty() {
        return;
    }
    if let Some(Token::Lit(last)) = tokens.last_mut() {
        last.push_str(text);
    } else {
        tokens.push(Token::Lit(text.to_string()));
    }
}

impl Parser<'_> {
    fn at(&self, pat: &str) -> bool {
        self.b[self.i..].starts_with(pat.as_bytes())
    }

    /// Starts of an escape or reference that end a run of plain text.
    fn at_opener(&self) -> bool {
        self.at("${") || self.at("\\${") || self.at("\\\\${") || self.at("\\$[")
    }

    fn next_char(&mut self) -> &str {
        let start = self.i;
        let len = self.s[start..].chars().next().map_or(1, char::len_utf8);
        self.i += len;
        &self.s[start..start + len]
    }

    /// The top level: items are references or runs of text. A double
    /// escape before `}` only counts at the start of an item, as in reclass-rs.
    fn outer(&mut self) -> Result<Vec<Token>, String> {
        let mut tokens = Vec::new();
        while self.i < self.b.len() {
            if self.at("${") {
                let r = self.reference(1)?;
                tokens.push(r);
            } else if self.at("\\\\${") || self.at("\\\\}") {
                self.i += 2;
                push_lit(&mut tokens, "\\");
            } else if self.at("\\${") {
                self.i += 3;
                push_lit(&mut tokens, "${");
            } else if self.at("\\$[") {
                self.i += 3;
                push_lit(&mut tokens, "$[");
            } else {
                // A run of text up to the next opener.
                let start = self.i;
                self.next_char();
                while self.i < self.b.len() && !self.at_opener() {
                    self.next_char();
                }
                let text = &self.s[start..self.i];
                push_lit(&mut tokens, text);
            }
        }
        Ok(tokens)
    }

    fn reference(&mut self, depth: usize) -> Result<Token, String> {
        let open = self.i;
        if depth > MAX_REF_NESTING {
            return Err(format!(
                "references nested deeper than {MAX_REF_NESTING} levels (the `${{` at character {}): flatten the reference",
                self.s[..open].chars().count() + 1
            ));
        }
        self.i += 2;
        let mut tokens = Vec::new();
        loop {
            if self.i >= self.b.len() {
                // The rest of the string is not quoted: it may be a secret.
                return Err(format!(
                    "unclosed reference: the `${{` at character {} has no closing `}}`: add it or escape it as `\\${{`",
                    self.s[..open].chars().count() + 1
                ));
            }
            if self.at("\\\\${") || self.at("\\\\}") {
                self.i += 2;
                push_lit(&mut tokens, "\\");
            } else if self.at("\\${") {
                self.i += 3;
                push_lit(&mut tokens, "${");
            } else if self.at("\\}") {
                self.i += 2;
                push_lit(&mut tokens, "}");
            } else if self.at("\\$[") {
                self.i += 3;
                push_lit(&mut tokens, "$[");
            } else if self.at("${") {
                let r = self.reference(depth + 1)?;
                tokens.push(r);
            } else if self.at("}") {
                self.i += 1;
                if tokens.is_empty() {
                    return Err("empty reference `${}`".into());
                }
                return Ok(Token::Ref(tokens));
            } else {
                let c = self.next_char().to_string();
                push_lit(&mut tokens, &c);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lit(s: &str) -> Token {
        Token::Lit(s.into())
    }
    fn r(tokens: Vec<Token>) -> Token {
        Token::Ref(tokens)
    }
    fn toks(s: &str) -> Vec<Token> {
        parse(s).unwrap().unwrap().tokens
    }

    #[test]
    fn plain_strings_are_not_templates() {
        assert_eq!(parse("hello $5 {x}").unwrap(), None);
        assert_eq!(parse(r"C:\path").unwrap(), None);
    }

    #[test]
    fn simple_and_combined() {
        assert_eq!(toks("${a:b}"), vec![r(vec![lit("a:b")])]);
        assert_eq!(
            toks("x-${a}-y"),
            vec![lit("x-"), r(vec![lit("a")]), lit("-y")]
        );
        assert!(parse("${a}").unwrap().unwrap().is_single_ref());
    }

    #[test]
    fn nested() {
        assert_eq!(
            toks("${a:${b}}"),
            vec![r(vec![lit("a:"), r(vec![lit("b")])])]
        );
    }

    #[test]
    fn escapes() {
        assert_eq!(toks(r"\${x}"), vec![lit("${x}")]);
        assert_eq!(toks(r"a \\${x}"), vec![lit("a \\"), r(vec![lit("x")])]);
        assert_eq!(toks(r"\$[ q ]"), vec![lit("$[ q ]")]);
        assert_eq!(toks(r"${c}\}"), vec![r(vec![lit("c")]), lit("\\}")]);
        assert_eq!(toks("$[ q ]"), vec![lit("$[ q ]")]);
        assert_eq!(toks(r"${a\}b}"), vec![r(vec![lit("a}b")])]);
    }

    #[test]
    fn errors() {
        assert!(parse("foo-${bar")
            .unwrap_err()
            .contains("unclosed reference"));
        assert!(parse("${}").is_err());
    }

    /// Re-probe of 2026-11-26: 30,000 nested `${` overflowed the stack.
    #[test]
    fn nesting_is_bounded() {
        let ok = format!(
            "{}a{}",
            "${".repeat(MAX_REF_NESTING),
            "}".repeat(MAX_REF_NESTING)
        );
        assert!(parse(&ok).is_ok());
        for n in [MAX_REF_NESTING + 1, 100_000] {
            let closed = format!("{}a{}", "${".repeat(n), "}".repeat(n));
            let open = "${".repeat(n);
            for s in [closed, open] {
                let e = parse(&s).unwrap_err();
                assert!(e.contains("nested deeper than 256"), "{e}");
            }
        }
    }
}
