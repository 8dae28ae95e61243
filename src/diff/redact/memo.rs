//! A per-thread memo of [`Redactor::scrub`](super::Redactor::scrub),
//! `Redactor::hide_credential_shapes` and `Redactor::key_matches`. A
//! review redacts both sides of every changed file, and the two sides (and
//! the other targets a class change reaches) hold mostly the same strings
//! and keys, while the string rules cost tens of thousands of instructions
//! per string and the key rules thousands per key. All three are pure
//! functions of the redactor's rules and the text, so a text seen before is
//! answered from here.

use std::cell::RefCell;
use std::collections::HashMap;

/// Longer strings are scrubbed every time: long texts rarely repeat.
const MAX_TEXT: usize = 16 * 1024;
/// Bytes one thread's memo of one redactor may hold before it starts over.
const MAX_BYTES: usize = 8 * 1024 * 1024;
/// Redactors with a memo per thread (a review uses one or two kinds).
const MAX_REDACTORS: usize = 2;

#[derive(Default)]
struct Memo {
    bytes: usize,
    /// By [`Text`].
    texts: [HashMap<Box<str>, Box<str>, ahash::RandomState>; 2],
    key_matches: HashMap<Box<str>, bool, ahash::RandomState>,
}

thread_local! {
    /// Most recently used last.
    static MEMOS: RefCell<Vec<(u64, Memo)>> = const { RefCell::new(Vec::new()) };
}

/// What a remembered text went through.
#[derive(Clone, Copy)]
pub(super) enum Text {
    /// `Redactor::scrub`.
    Scrubbed = 0,
    /// `Redactor::hide_credential_shapes`.
    ShapesHidden = 1,
}

/// `scrub()`'s result for `text` under the redactor `id`, remembered.
pub(super) fn scrubbed(id: u64, kind: Text, text: &str, scrub: impl FnOnce() -> String) -> String {
    if text.len() > MAX_TEXT {
        return scrub();
    }
    if let Some(v) = with_memo(id, |m| {
        m.texts[kind as usize].get(text).map(|v| v.to_string())
    }) {
        return v;
    }
    // Not borrowed while the rules run: they may scrub inner strings.
    let out = scrub();
    with_memo(id, |m| {
        m.bytes += text.len() + out.len() + 64;
        m.texts[kind as usize].insert(text.into(), out.as_str().into());
    });
    out
}

/// `matches()`'s answer for `key` under the redactor `id`, remembered.
pub(super) fn key_matched(id: u64, key: &str, matches: impl FnOnce() -> bool) -> bool {
    if key.len() > MAX_TEXT {
        return matches();
    }
    if let Some(v) = with_memo(id, |m| m.key_matches.get(key).copied()) {
        return v;
    }
    let v = matches();
    with_memo(id, |m| {
        m.bytes += key.len() + 64;
        m.key_matches.insert(key.into(), v);
    });
    v
}

/// Runs `f` on this thread's memo of redactor `id` (made, and the least
/// recently used one dropped, as needed; emptied past [`MAX_BYTES`]).
fn with_memo<T>(id: u64, f: impl FnOnce(&mut Memo) -> T) -> T {
    MEMOS.with(|m| {
        let mut m = m.borrow_mut();
        let mut entry = match m.iter().position(|(i, _)| *i == id) {
            Some(at) => m.remove(at),
            None => {
                if m.len() == MAX_REDACTORS {
                    m.remove(0);
                }
                (id, Memo::default())
            }
        };
        if entry.1.bytes > MAX_BYTES {
            entry.1 = Memo::default();
        }
        let r = f(&mut entry.1);
        m.push(entry);
        r
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_remembered_text_is_not_scrubbed_again_and_redactors_do_not_share() {
        let runs = std::cell::Cell::new(0);
        let scrub = |id: u64, t: &str| {
            scrubbed(id, Text::Scrubbed, t, || {
                runs.set(runs.get() + 1);
                format!("{id}:{t}")
            })
        };
        assert_eq!(
            scrub(u64::MAX - 1, "password=x"),
            format!("{}:password=x", u64::MAX - 1)
        );
        assert_eq!(
            scrub(u64::MAX - 1, "password=x"),
            format!("{}:password=x", u64::MAX - 1)
        );
        assert_eq!(
            scrub(u64::MAX - 2, "password=x"),
            format!("{}:password=x", u64::MAX - 2)
        );
        assert_eq!(runs.get(), 2);
        let long = "x".repeat(MAX_TEXT + 1);
        scrub(u64::MAX - 1, &long);
        scrub(u64::MAX - 1, &long);
        assert_eq!(runs.get(), 4);
    }

    #[test]
    fn a_key_is_matched_once_per_redactor() {
        let runs = std::cell::Cell::new(0);
        let matched = |id: u64, k: &str| {
            key_matched(id, k, || {
                runs.set(runs.get() + 1);
                k.contains("pass")
            })
        };
        assert!(matched(u64::MAX - 3, "password"));
        assert!(matched(u64::MAX - 3, "password"));
        assert!(!matched(u64::MAX - 3, "name"));
        assert!(!matched(u64::MAX - 3, "name"));
        assert!(matched(u64::MAX - 4, "password"));
        assert_eq!(runs.get(), 3);
    }
}
