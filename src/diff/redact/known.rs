//! Secret values strata itself knows: the strings a review's inventories
//! hold under secret-named parameters (`db.password`), and the values of
//! the Kapitan `plain`/`base64` references such a parameter names. A
//! template that copies one under a neutral key (`DB_CONN_ARG`, a
//! container's args, an annotation) or into a larger string, or encodes it
//! as base64 (a ConfigMap's `binaryData`, `std.base64(user + ':' + pw)`),
//! gives the diff's rules nothing to read there (red41): the value itself
//! is known, so it is hidden wherever it occurs, exactly, and a base64 run
//! that holds its encoding is hidden whole.

use crate::value::Value;
use base64::Engine;
use std::collections::BTreeSet;

use super::{Redactor, OLD};

/// Shorter values are not hidden by their value: a five-letter password
/// would hide that word in every file (the error masks' bound too).
const MIN_LEN: usize = 6;

/// The automaton of the known values and their encoded forms.
#[derive(Debug)]
pub(super) struct Known {
    ac: aho_corasick::AhoCorasick,
    /// Per pattern: whether it is an encoded form (base64, hex, a digest:
    /// the run around it is hidden whole).
    encoded: Vec<bool>,
    /// The values as an escape-decoding component writes them back
    /// (red42): read over the text with its escapes decoded ([`View`]).
    decoded: Option<aho_corasick::AhoCorasick>,
    /// The values of 16 characters or more without their blanks, read over
    /// a multi-line text decoded and without its blanks: a value split
    /// across lines (a PEM body re-wrapped at another width, a passphrase
    /// folded by a YAML writer, a key indented by a template).
    joined: Option<aho_corasick::AhoCorasick>,
}

/// Values shorter than this without their blanks are not read across
/// lines: joining a text's words could spell a short one.
const JOINED_MIN: usize = 16;

fn automaton<I: IntoIterator<Item = String>>(patterns: I) -> Option<aho_corasick::AhoCorasick> {
    let mut p: Vec<String> = patterns.into_iter().collect();
    p.sort();
    p.dedup();
    if p.is_empty() {
        return None;
    }
    aho_corasick::AhoCorasick::builder()
        .match_kind(aho_corasick::MatchKind::LeftmostLongest)
        .build(&p)
        .ok()
}

impl Known {
    pub(super) fn new(values: &BTreeSet<String>) -> Option<Known> {
        let mut patterns: Vec<(String, bool)> = Vec::new();
        let mut decoded = Vec::new();
        let mut joined = Vec::new();
        for v in values {
            patterns.push((v.clone(), false));
            for form in base64_forms(v) {
                patterns.push((form, true));
            }
            for form in hex_forms(v) {
                patterns.push((form, true));
            }
            for form in base32_forms(v) {
                patterns.push((form, true));
            }
            decoded.push(v.clone());
            if v.contains(' ') {
                // A form-encoded query writes a blank as `+`.
                decoded.push(v.replace(' ', "+"));
            }
            let bare: String = v.split_whitespace().collect();
            if bare.len() >= JOINED_MIN {
                // A PEM block's body alone, without its armour lines.
                let body: String = v
                    .lines()
                    .filter(|l| !l.trim_start().starts_with("-----"))
                    .flat_map(str::split_whitespace)
                    .collect();
                if body.len() >= JOINED_MIN && body != bare {
                    joined.push(body);
                }
                joined.push(bare);
            }
        }
        if patterns.is_empty() {
            return None;
        }
        // Longest first among equals: a value holding another is hidden
        // whole (leftmost-longest picks the longer at one start anyway).
        patterns.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.cmp(b)));
        patterns.dedup_by(|a, b| a.0 == b.0);
        let ac = aho_corasick::AhoCorasick::builder()
            .match_kind(aho_corasick::MatchKind::LeftmostLongest)
            .build(patterns.iter().map(|p| p.0.as_str()))
            .ok()?;
        Some(Known {
            ac,
            encoded: patterns.iter().map(|p| p.1).collect(),
            decoded: automaton(decoded),
            joined: automaton(joined),
        })
    }

    /// `text` with every known value replaced by `<redacted>`, every run
    /// holding one's encoding (base64, hex, its digest) replaced whole, and
    /// a value written with escapes (JSON, YAML, percent, HTML,
    /// quoted-printable) or split across lines hidden where it spans (each
    /// line's part, so that lines stay lines).
    pub(super) fn hide(&self, text: &str) -> Option<String> {
        let bytes = text.as_bytes();
        let mut spans: Vec<(usize, usize)> = Vec::new();
        for m in self.ac.find_iter(text) {
            let (mut start, mut end) = (m.start(), m.end());
            if self.encoded[m.pattern().as_usize()] {
                while start > 0 && is_base64_byte(bytes[start - 1]) {
                    start -= 1;
                }
                while end < bytes.len() && (is_base64_byte(bytes[end]) || bytes[end] == b'=') {
                    end += 1;
                }
            }
            spans.push((start, end));
        }
        let multi_line = bytes.contains(&b'\n');
        if let Some(ac) = &self.decoded {
            // Each family of escapes read on its own: a value holding `%Bd`
            // or `=AB` is not one to percent- or QP-decode. Backslash
            // escapes twice (a JSON string quoted again by a YAML writer).
            for family in Family::ALL {
                if !family.present(bytes) {
                    continue;
                }
                let view = View::new(bytes, family, false);
                spans.extend(
                    ac.find_iter(&view.bytes)
                        .map(|m| view.span(m.start(), m.end())),
                );
                if family == Family::Backslash && family.present(&view.bytes) {
                    let twice = View::new(&view.bytes, family, false);
                    spans.extend(ac.find_iter(&twice.bytes).map(|m| {
                        let (start, end) = twice.span(m.start(), m.end());
                        view.span(start, end)
                    }));
                }
            }
        }
        if let (Some(ac), true) = (&self.joined, multi_line) {
            let family = if Family::Backslash.present(bytes) {
                Family::Backslash
            } else {
                Family::None
            };
            let view = View::new(bytes, family, true);
            spans.extend(
                ac.find_iter(&view.bytes)
                    .map(|m| view.span(m.start(), m.end())),
            );
        }
        if spans.is_empty() {
            return None;
        }
        spans.sort_unstable();
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        for (mut start, mut end) in spans {
            while !text.is_char_boundary(start) {
                start -= 1;
            }
            while !text.is_char_boundary(end) {
                end += 1;
            }
            if start < at {
                // Inside a run already hidden.
                if end > at {
                    hide_span(&text[at..end], &mut out);
                    at = end;
                }
                continue;
            }
            out.push_str(&text[at..start]);
            hide_span(&text[start..end], &mut out);
            at = end;
        }
        out.push_str(&text[at.min(text.len())..]);
        Some(out)
    }
}

/// `<redacted>` for a span's text, once per line it covers (the blanks
/// that start a line kept), so that a value split across lines leaves the
/// lines around it where they were.
fn hide_span(span: &str, out: &mut String) {
    for (i, line) in span.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let body = line.trim_start();
        out.push_str(&line[..line.len() - body.len()]);
        if !body.trim_end().is_empty() {
            out.push_str(OLD);
        }
    }
}

/// A family of escapes [`View`] decodes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Family {
    /// None: only blanks dropped.
    None,
    /// JSON/YAML/C backslash escapes and HTML/XML character references.
    Backslash,
    /// Percent-encoding.
    Percent,
    /// Quoted-printable (`=3D`, a soft line break).
    QuotedPrintable,
}

impl Family {
    const ALL: [Family; 3] = [Family::Backslash, Family::Percent, Family::QuotedPrintable];

    /// Whether `b` holds one of this family's escapes. Most texts hold
    /// none of the bytes that start one: those are found by `memchr`
    /// (`contains`, `match_indices`) before anything reads further.
    fn present(self, b: &[u8]) -> bool {
        let (first, follows): (u8, fn(&[u8]) -> bool) = match self {
            Family::None => return false,
            Family::Backslash => return b.contains(&b'\\') || b.contains(&b'&'),
            Family::Percent => (b'%', |r| {
                r.len() >= 2 && r[0].is_ascii_hexdigit() && r[1].is_ascii_hexdigit()
            }),
            Family::QuotedPrintable => (b'=', |r| {
                r.first()
                    .is_some_and(|&n| n == b'\n' || n == b'\r' || is_upper_hex(n))
            }),
        };
        if !b.contains(&first) {
            return false;
        }
        match std::str::from_utf8(b) {
            Ok(s) => s
                .match_indices(first as char)
                .any(|(i, _)| follows(&b[i + 1..])),
            Err(_) => b
                .iter()
                .enumerate()
                .any(|(i, &c)| c == first && follows(&b[i + 1..])),
        }
    }
}

fn is_upper_hex(b: u8) -> bool {
    b.is_ascii_digit() || (b'A'..=b'F').contains(&b)
}

fn hex_val(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

/// A text as a component that decodes its escapes reads it: JSON/YAML
/// backslash escapes (`\"`, `\n`, `\u003c`, `\x41`), percent-encoding,
/// HTML character references, quoted-printable (`=3D`, soft line breaks);
/// with `strip`, without blanks. Which text each byte comes from is worked
/// out only when a value is found in it: nearly every text holds none, and
/// keeping two offsets per byte of every file made the text mode's review
/// 14.5% more instructions (red42).
struct View<'a> {
    src: &'a [u8],
    family: Family,
    strip: bool,
    bytes: Vec<u8>,
    /// Per byte of `bytes`: the start and end of its source in `src`.
    from: std::cell::OnceCell<Vec<(usize, usize)>>,
}

impl<'a> View<'a> {
    fn new(src: &'a [u8], family: Family, strip: bool) -> View<'a> {
        let mut bytes = Vec::with_capacity(src.len());
        // The runs of bytes that are neither an escape's first byte nor a
        // blank to strip are copied whole; only the bytes between them go
        // through [`decode_at`] as [`walk`] reads them (red43: walking
        // every byte was 2.1 G of the text mode's 23.3 G instructions on
        // kapitan-reference with its values known). The bytes are
        // [`walk`]'s, so [`View::from`] maps them back.
        let special = special_bytes(family, strip);
        let mut i = 0;
        while i < src.len() {
            let mut j = i;
            while j < src.len() && !special[src[j] as usize] {
                j += 1;
            }
            bytes.extend_from_slice(&src[i..j]);
            if j == src.len() {
                break;
            }
            let (decoded, len) = decode_at(src, j, family);
            push_decoded(decoded, strip, |c| bytes.push(c));
            i = j + len;
        }
        View {
            src,
            family,
            strip,
            bytes,
            from: std::cell::OnceCell::new(),
        }
    }

    fn from(&self) -> &[(usize, usize)] {
        self.from.get_or_init(|| {
            let mut from = Vec::with_capacity(self.bytes.len());
            walk(self.src, self.family, self.strip, |_, i, end| {
                from.push((i, end))
            });
            from
        })
    }

    /// The span of `src` that the view's `start..end` comes from.
    fn span(&self, start: usize, end: usize) -> (usize, usize) {
        let from = self.from();
        (from[start].0, from[end - 1].1)
    }
}

/// The bytes at which [`decode_at`] may read more than the byte itself
/// (an escape's first byte), and with `strip` the blanks it drops: every
/// other byte is itself in a [`View`]. Made once: a view is built for
/// every line the text mode reads.
fn special_bytes(family: Family, strip: bool) -> &'static [bool; 256] {
    const fn table(escapes: &[u8], strip: bool) -> [bool; 256] {
        let mut t = [false; 256];
        let mut i = 0;
        while i < escapes.len() {
            t[escapes[i] as usize] = true;
            i += 1;
        }
        if strip {
            // `u8::is_ascii_whitespace`'s bytes.
            t[b' ' as usize] = true;
            t[b'\t' as usize] = true;
            t[b'\n' as usize] = true;
            t[0x0c] = true;
            t[b'\r' as usize] = true;
        }
        t
    }
    static TABLES: [[bool; 256]; 8] = [
        table(b"", false),
        table(b"", true),
        table(b"\\&", false),
        table(b"\\&", true),
        table(b"%", false),
        table(b"%", true),
        table(b"=", false),
        table(b"=", true),
    ];
    let family = match family {
        Family::None => 0,
        Family::Backslash => 1,
        Family::Percent => 2,
        Family::QuotedPrintable => 3,
    };
    &TABLES[family * 2 + usize::from(strip)]
}

/// Calls `out` with the bytes a decoded item stands for in a [`View`]
/// (none for a blank with `strip`, or a soft line break).
fn push_decoded(decoded: Decoded, strip: bool, mut out: impl FnMut(u8)) {
    match decoded {
        Decoded::Byte(c) => {
            if !(strip && c.is_ascii_whitespace()) {
                out(c);
            }
        }
        Decoded::Char(c) => {
            if !(strip && c.is_whitespace()) {
                let mut buf = [0u8; 4];
                for &x in c.encode_utf8(&mut buf).as_bytes() {
                    out(x);
                }
            }
        }
        Decoded::Nothing => {}
    }
}

/// Calls `out` with each byte of `b` decoded and the span of `b` it
/// comes from.
fn walk(b: &[u8], family: Family, strip: bool, mut out: impl FnMut(u8, usize, usize)) {
    let mut i = 0;
    while i < b.len() {
        let (decoded, len) = decode_at(b, i, family);
        let end = i + len;
        push_decoded(decoded, strip, |c| out(c, i, end));
        i = end;
    }
}

enum Decoded {
    Byte(u8),
    Char(char),
    /// A soft line break (`=` at a line's end, `\` before a line break).
    Nothing,
}

/// The escape at `b[i]`, if any, and its length (else the byte itself).
fn decode_at(b: &[u8], i: usize, family: Family) -> (Decoded, usize) {
    let at = |k: usize| b.get(i + k).copied();
    let hex2 = |k: usize| Some(hex_val(at(k)?)? * 16 + hex_val(at(k + 1)?)?);
    let hex_n = |k: usize, n: usize| -> Option<u32> {
        let s = std::str::from_utf8(b.get(i + k..i + k + n)?).ok()?;
        u32::from_str_radix(s, 16).ok()
    };
    match (family, b[i]) {
        (Family::Backslash, b'\\') => match at(1) {
            Some(b'n') => (Decoded::Byte(b'\n'), 2),
            Some(b't') => (Decoded::Byte(b'\t'), 2),
            Some(b'r') => (Decoded::Byte(b'\r'), 2),
            Some(c @ (b'"' | b'\\' | b'/' | b'\'' | b' ')) => (Decoded::Byte(c), 2),
            Some(b'\n') => (Decoded::Nothing, 2),
            Some(b'x') if hex2(2).is_some() => (Decoded::Byte(hex2(2).unwrap_or(0)), 4),
            Some(b'u') => match hex_n(2, 4) {
                // A surrogate pair (`\ud83d\ude00`).
                Some(hi @ 0xD800..=0xDBFF) if at(6) == Some(b'\\') && at(7) == Some(b'u') => {
                    match hex_n(8, 4) {
                        Some(lo @ 0xDC00..=0xDFFF) => {
                            let c = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
                            char::from_u32(c)
                                .map_or((Decoded::Byte(b'\\'), 1), |c| (Decoded::Char(c), 12))
                        }
                        _ => (Decoded::Byte(b'\\'), 1),
                    }
                }
                Some(c) => {
                    char::from_u32(c).map_or((Decoded::Byte(b'\\'), 1), |c| (Decoded::Char(c), 6))
                }
                None => (Decoded::Byte(b'\\'), 1),
            },
            _ => (Decoded::Byte(b'\\'), 1),
        },
        (Family::Percent, b'%') => match hex2(1) {
            Some(c) => (Decoded::Byte(c), 3),
            None => (Decoded::Byte(b'%'), 1),
        },
        (Family::QuotedPrintable, b'=') => match (at(1), at(2)) {
            (Some(b'\n'), _) => (Decoded::Nothing, 2),
            (Some(b'\r'), Some(b'\n')) => (Decoded::Nothing, 3),
            (Some(h), Some(l)) if is_upper_hex(h) && is_upper_hex(l) => {
                (Decoded::Byte(hex2(1).unwrap_or(0)), 3)
            }
            _ => (Decoded::Byte(b'='), 1),
        },
        (Family::Backslash, b'&') => {
            html_reference(&b[i..]).map_or((Decoded::Byte(b'&'), 1), |(c, n)| (Decoded::Char(c), n))
        }
        (_, c) => (Decoded::Byte(c), 1),
    }
}

/// An HTML/XML character reference at the start of `b` (`&amp;`, `&#60;`,
/// `&#x3c;`) and its length.
fn html_reference(b: &[u8]) -> Option<(char, usize)> {
    let end = b.iter().take(12).position(|&c| c == b';')?;
    let name = std::str::from_utf8(&b[1..end]).ok()?;
    let c = match name {
        "amp" => '&',
        "lt" => '<',
        "gt" => '>',
        "quot" => '"',
        "apos" => '\'',
        _ => {
            let n = name.strip_prefix('#')?;
            let code = match n.strip_prefix(['x', 'X']) {
                Some(h) => u32::from_str_radix(h, 16).ok()?,
                None => n.parse().ok()?,
            };
            char::from_u32(code)?
        }
    };
    Some((c, end + 1))
}

/// The value's bytes in hexadecimal (lower and upper case; byte-aligned,
/// so also inside a longer text's hex) and the hex digests a template
/// commonly writes of it alone (`std.md5`, Jinja2's `sha256`; a digest of
/// a short password is as good as the password to whoever can try a
/// dictionary).
fn hex_forms(value: &str) -> Vec<String> {
    use sha2::Digest;
    let b = value.as_bytes();
    let hex = |d: &[u8]| d.iter().map(|x| format!("{x:02x}")).collect::<String>();
    let lower = [
        hex(b),
        hex(&md5::compute(b).0),
        hex(&sha2::Sha256::digest(b)),
        hex(&sha2::Sha512::digest(b)),
    ];
    lower
        .iter()
        .flat_map(|h| [h.clone(), h.to_ascii_uppercase()])
        .collect()
}

/// red43: the value's base32 encoding (RFC 4648, as `base32` and TOTP
/// tools write it; without its `=` padding, in upper and lower case),
/// alone: inside a longer text's base32 it depends on the value's offset.
fn base32_forms(value: &str) -> Vec<String> {
    const ALPHABET: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    let mut out = String::new();
    let (mut acc, mut bits) = (0u32, 0u32);
    for &b in value.as_bytes() {
        acc = (acc << 8) | u32::from(b);
        bits += 8;
        while bits >= 5 {
            bits -= 5;
            out.push(ALPHABET[((acc >> bits) & 31) as usize] as char);
        }
        acc &= (1 << bits) - 1;
    }
    if bits > 0 {
        out.push(ALPHABET[((acc << (5 - bits)) & 31) as usize] as char);
    }
    vec![out.to_ascii_lowercase(), out]
}

fn is_base64_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'-' | b'_')
}

/// The parts of `value`'s base64 encoding that every encoding of a text
/// holding it shares, whatever the value's offset in that text (three
/// alignments), in the standard and the URL-safe alphabet: the encoded
/// characters that depend on the value's bytes alone. Values of fewer
/// than 9 bytes leave too short a part to be told from other base64 and
/// are read only as the whole encoding of the value alone.
fn base64_forms(value: &str) -> Vec<String> {
    let b = value.as_bytes();
    let std = base64::engine::general_purpose::STANDARD;
    let mut out = vec![std.encode(b).trim_end_matches('=').to_string()];
    if b.len() >= 9 {
        for off in 1..3 {
            let mut padded = vec![b'A'; off];
            padded.extend_from_slice(b);
            let enc = std.encode(&padded);
            let enc = enc.trim_end_matches('=');
            // The characters that also encode the padding bytes, and the
            // last group (which depends on what follows), are cut.
            let skip = (off * 8).div_ceil(6);
            let keep_end = ((off + b.len()) * 8 / 6).min(enc.len());
            if keep_end > skip + 8 {
                out.push(enc[skip..keep_end].to_string());
            }
        }
        // Alone, the last group depends on what follows too.
        let whole = &out[0];
        let cut = (b.len() * 8 / 6).min(whole.len());
        if cut > 8 {
            out.push(whole[..cut].to_string());
        }
    }
    let url: Vec<String> = out
        .iter()
        .filter(|f| f.contains(['+', '/']))
        .map(|f| f.replace('+', "-").replace('/', "_"))
        .collect();
    out.extend(url);
    out.retain(|f| f.len() >= 8);
    out
}

/// The secret values of rendered parameters (each target's, of each
/// revision a review reads): the strings (and numbers) under secret-named
/// keys, at any depth below one, and the `value` of a `{name, value}` pair
/// whose name is secret, as the error masks read them; without references
/// (`?{...}`, which a compile writes hashed) and without the values a diff
/// shows under a secret key (`${NAME}`, a template expression).
/// `reference` answers the value of a Kapitan `plain` or `base64`
/// reference tag found there (the refs file's, None when unknown).
pub fn secret_values<'a>(
    redactor: &Redactor,
    roots: impl IntoIterator<Item = &'a Value>,
    reference: &dyn Fn(&str) -> Option<String>,
) -> BTreeSet<String> {
    secret_values_of_sides(redactor, vec![(roots.into_iter().collect(), reference)])
}

/// One side's renders and its answer to a reference tag.
pub type Side<'a> = (Vec<&'a Value>, &'a dyn Fn(&str) -> Option<String>);

/// [`secret_values`] of several sides (a review's base and head), each with
/// its own references. The sides share the renders of the targets a change
/// cannot reach: each render is read once, and the reference tags it holds
/// are answered by every side it belongs to.
pub fn secret_values_of_sides(redactor: &Redactor, sides: Vec<Side<'_>>) -> BTreeSet<String> {
    use rayon::prelude::*;
    // Each distinct render with the sides holding it (a bit per side).
    let mut index: std::collections::HashMap<*const Value, usize> = Default::default();
    let mut roots: Vec<(&Value, u64)> = Vec::new();
    for (side, (values, _)) in sides.iter().enumerate().take(64) {
        for v in values {
            let i = *index.entry(std::ptr::from_ref(*v)).or_insert_with(|| {
                roots.push((v, 0));
                roots.len() - 1
            });
            roots[i].1 |= 1 << side;
        }
    }
    let n = sides.len().min(64);
    // 1,000 targets' parameters are millions of values: read side by
    // side, each thread with its own memo of the keys' kinds.
    let (mut out, tags) = roots
        .par_iter()
        .fold(
            || (Memo::default(), BTreeSet::new(), vec![BTreeSet::new(); n]),
            |(mut memo, mut out, mut tags), (v, mask)| {
                let mut found = BTreeSet::new();
                collect(redactor, &mut memo, v, false, &mut out, &mut found, 0);
                for (side, t) in tags.iter_mut().enumerate() {
                    if mask & (1 << side) != 0 {
                        t.extend(found.iter().cloned());
                    }
                }
                (memo, out, tags)
            },
        )
        .map(|(_, out, tags)| (out, tags))
        .reduce(
            || (BTreeSet::new(), vec![BTreeSet::new(); n]),
            |(mut a, mut at), (b, bt)| {
                a.extend(b);
                for (x, y) in at.iter_mut().zip(bt) {
                    x.extend(y);
                }
                (a, at)
            },
        );
    for ((_, reference), tags) in sides.iter().zip(tags) {
        for tag in tags {
            if let Some(v) = reference(&tag) {
                add(&v, &mut out, &mut BTreeSet::new());
            }
        }
    }
    out
}

/// What a key is to [`collect`], asked once per distinct key.
#[derive(Clone, Copy)]
enum Kind {
    /// Names a secret (`password`, `apiToken`).
    Secret,
    /// Names or points at one (`secretKeyRef`, `passwordFile`).
    Pointer,
    Neutral,
}

type Memo<'v> = std::collections::HashMap<&'v str, Kind, ahash::RandomState>;

fn kind<'v>(redactor: &Redactor, memo: &mut Memo<'v>, k: &'v str) -> Kind {
    *memo.entry(k).or_insert_with(|| {
        if !super::structural::names_a_secret_value(k) {
            Kind::Pointer
        } else if redactor.key_matches(k) {
            Kind::Secret
        } else {
            Kind::Neutral
        }
    })
}

fn collect<'v>(
    redactor: &Redactor,
    memo: &mut Memo<'v>,
    v: &'v Value,
    secret: bool,
    out: &mut BTreeSet<String>,
    tags: &mut BTreeSet<String>,
    depth: usize,
) {
    if depth > 512 {
        return;
    }
    match v {
        Value::String(s) if secret => add(s, out, tags),
        Value::Int(i) if secret => add(&i.to_string(), out, tags),
        Value::List(items) => {
            for i in items {
                collect(redactor, memo, i, secret, out, tags, depth + 1);
            }
        }
        Value::Map(m) => {
            let named = ["name", "key"].iter().any(|k| {
                m.get(*k)
                    .and_then(Value::as_str)
                    .is_some_and(|n| redactor.key_matches(n))
            });
            for (k, child) in m {
                let hide = match kind(redactor, memo, k) {
                    // What is below a key that names or points at a
                    // secret names things, even under a secret's key
                    // (`GITHUB_TOKEN: {secretKeyRef: {key: GITHUB_TOKEN}}`).
                    Kind::Pointer => false,
                    Kind::Secret => true,
                    Kind::Neutral => secret || (named && k == "value"),
                };
                collect(redactor, memo, child, hide, out, tags, depth + 1);
            }
        }
        _ => {}
    }
}

/// A value that names rather than holds (kapitan-reference's
/// `target_secret: targets/tesoro`, a refs path, also with its backend,
/// `plain:targets/tesoro/cert-key`; `GITHUB_TOKEN`, the name
/// of a variable): a lower-case path of words, or a variable's name in
/// capitals with `_`. Hidden wherever it occurs, it hid those names in
/// every script and manifest of the catalog.
fn names_something(s: &str) -> bool {
    let path = s.contains('/')
        && s.bytes().all(|b| {
            b.is_ascii_lowercase()
                || b.is_ascii_digit()
                || matches!(b, b'/' | b'.' | b'_' | b'-' | b':')
        });
    let variable = s.contains('_')
        && s.starts_with(|c: char| c.is_ascii_uppercase())
        && s.bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');
    path || variable
}

fn add(s: &str, out: &mut BTreeSet<String>, tags: &mut BTreeSet<String>) {
    let s = s.trim();
    if s.starts_with("?{") {
        // The refs file's value, for a whole `?{plain:…}`/`?{base64:…}`
        // tag (a compile writes a plain reference's value into the
        // catalog; a base64 one's with --embed-refs, encoded): read once
        // the parameters are.
        tags.insert(s.to_string());
        return;
    }
    if s.chars().count() < MIN_LEN || super::structural::is_placeholder(s) || names_something(s) {
        return;
    }
    out.insert(s.to_string());
    if s.contains('\n') {
        for line in s.lines().map(str::trim) {
            if line.chars().count() >= MIN_LEN {
                out.insert(line.to_string());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A view copies the runs between escapes and blanks whole (red43):
    /// its bytes are exactly those of [`walk`], byte by byte, for every
    /// family, stripped or not.
    #[test]
    fn views_hold_the_bytes_walk_decodes() {
        let texts: [&[u8]; 8] = [
            b"plain text without escapes",
            b"a\\\"b\\\\c\\u003cd\\x41 e\\\nf &amp; &#60; &#x3c; &bogus; \\ud83d\\ude00 end\\",
            b"%41%2f%zz %4 p%",
            b"=3D=\nsoft =\r\nbreak =4 =ab =",
            b"  lead\ttab\r\nline\x0cff\x0bvt  ",
            "caf\u{e9} \u{2003}em \\u2003 \\u00a0nb".as_bytes(),
            b"\xff\xfe invalid utf8 \\u12",
            b"",
        ];
        for text in texts {
            for family in [
                Family::None,
                Family::Backslash,
                Family::Percent,
                Family::QuotedPrintable,
            ] {
                for strip in [false, true] {
                    let mut walked = Vec::new();
                    walk(text, family, strip, |c, _, _| walked.push(c));
                    let view = View::new(text, family, strip);
                    assert_eq!(view.bytes, walked, "{:?}", String::from_utf8_lossy(text));
                    assert_eq!(view.from().len(), view.bytes.len());
                }
            }
        }
    }

    /// RFC 4648's test vectors, without padding.
    #[test]
    fn base32_forms_are_rfc_4648s() {
        for (v, b32) in [
            ("foobar", "MZXW6YTBOI"),
            ("fooba", "MZXW6YTB"),
            ("foob", "MZXW6YQ"),
            ("f", "MY"),
        ] {
            assert_eq!(
                base32_forms(v),
                vec![b32.to_ascii_lowercase(), b32.to_string()]
            );
        }
    }
}
