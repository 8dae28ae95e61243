//! Escapes and invisible characters: a string's escapes decoded (so that a
//! key spelled with them is read) and written back, and control or
//! zero-width characters read as blanks.

/// The escapes of a YAML double-quoted or JSON string decoded (`\t`,
/// `\n`, `\/`, `\uXXXX`, `\xXX`, `\UXXXXXXXX`), so that the rules read
/// `pass\u0077ord` as `password` and `password\tx` as a `password x`
/// line. `\\` and `\"` stay as written: decoded they would open or close
/// quotes the rules read; an escape that does not decode stays too.
pub(super) fn decode_escapes(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find('\\') {
        out.push_str(&rest[..i]);
        let esc = &rest[i + 1..];
        let hex = |n: usize| {
            esc.get(1..1 + n)
                .filter(|h| h.bytes().all(|b| b.is_ascii_hexdigit()))
                .and_then(|h| u32::from_str_radix(h, 16).ok())
                .and_then(char::from_u32)
        };
        let (decoded, used) = match esc.chars().next() {
            Some('t') => (Some('\t'), 1),
            Some('n') => (Some('\n'), 1),
            Some('r') => (Some('\r'), 1),
            Some('/') => (Some('/'), 1),
            // YAML's escape character and NUL (`"\e[1mpassword\e[0m: x"`).
            Some('e') => (Some('\u{1b}'), 1),
            Some('0') => (Some('\0'), 1),
            Some('x') => (hex(2), 3),
            Some('u') => (hex(4), 5),
            Some('U') => (hex(8), 9),
            _ => (None, 0),
        };
        match decoded {
            Some(ch) => {
                out.push(ch);
                rest = &esc[used..];
            }
            None => {
                // `\\`, `\"` or an unknown escape: both characters as written.
                let len = esc.chars().next().map_or(0, char::len_utf8);
                out.push('\\');
                out.push_str(&esc[..len]);
                rest = &esc[len..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// `\"` and `\\` decoded (the escapes [`decode_escapes`] keeps): a JSON
/// string's quoted word read as text (verify22).
pub(super) fn decode_quote_escapes(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some(n @ ('"' | '\\')) => out.push(n),
                Some(n) => {
                    out.push(c);
                    out.push(n);
                }
                None => out.push(c),
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Whether a text holds a control character other than a tab or line
/// break (NUL, SOH, ESC, DEL), a zero-width space (U+200B) or a
/// byte-order mark (U+FEFF): [`Redactor::scrub_invisible`](super::Redactor::scrub_invisible). One scan of
/// the bytes; most strings have none.
pub(super) fn has_invisible(text: &str) -> bool {
    text.bytes()
        .any(|b| (b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r')) || b == 0x7f)
        || text.contains('\u{200b}')
        || text.contains('\u{feff}')
        || text.contains(is_other_invisible)
}

/// Zero-width characters besides U+200B and U+FEFF: the word joiner (the
/// byte-order mark's replacement), the invisible operators and the
/// Mongolian vowel separator (verify 17).
fn is_other_invisible(c: char) -> bool {
    matches!(c, '\u{2060}'..='\u{2064}' | '\u{180e}')
}

/// `text` with each ANSI escape sequence (`ESC [ … letter`) and each other
/// character [`has_invisible`] looks for written as a blank.
pub(super) fn blank_invisible(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(ch) = chars.next() {
        match ch {
            '\u{1b}' => {
                if chars.peek() == Some(&'[') {
                    chars.next();
                    // Parameters, then the final letter.
                    for c in chars.by_ref() {
                        if !(c.is_ascii_digit() || matches!(c, ';' | '?')) {
                            break;
                        }
                    }
                }
                out.push(' ');
            }
            '\t' | '\n' | '\r' => out.push(ch),
            c if (c as u32) < 0x20
                || c == '\u{7f}'
                || c == '\u{200b}'
                || c == '\u{feff}'
                || is_other_invisible(c) =>
            {
                out.push(' ')
            }
            c => out.push(c),
        }
    }
    out
}

/// What [`decode_escapes`] made of the control characters written back as
/// escapes, so that a redacted line stays one line.
pub(super) fn encode_controls(text: &str) -> String {
    text.replace('\t', "\\t")
        .replace('\n', "\\n")
        .replace('\r', "\\r")
}

/// A `%XX`-encoded text decoded (`token%3A%20X` gives `token: X`), or
/// `None` when it holds no escape or decodes to something not UTF-8.
pub(super) fn percent_decode(text: &str) -> Option<String> {
    if !text.contains('%') {
        return None;
    }
    String::from_utf8(crate::remote::percent_decoded(text)).ok()
}
