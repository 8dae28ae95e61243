//! A memo of [`Redactor::scrub`](super::Redactor::scrub),
//! `Redactor::hide_credential_shapes` and `Redactor::key_matches`. A
//! review redacts both sides of every changed file, and the two sides (and
//! the other targets a class change reaches) hold mostly the same strings
//! and keys, while the string rules cost tens of thousands of instructions
//! per string and the key rules thousands per key. All three are pure
//! functions of the redactor's rules and the text, so a text seen before is
//! answered from here. One memo serves all threads: the base's and the
//! head's lint run on two and mask the same messages.

use std::collections::HashMap;
use std::sync::Mutex;

/// Longer strings are scrubbed every time: long texts rarely repeat.
const MAX_TEXT: usize = 16 * 1024;
/// Bytes the memo of one redactor may hold before it starts over.
const MAX_BYTES: usize = 8 * 1024 * 1024;
/// Redactors with a memo (a review uses one or two kinds).
const MAX_REDACTORS: usize = 4;

#[derive(Default)]
struct Memo {
    bytes: usize,
    /// By [`Text`].
    texts: [HashMap<Box<str>, Box<str>, ahash::RandomState>; 2],
    key_matches: HashMap<Box<str>, bool, ahash::RandomState>,
}

/// Each redactor's memo, the most recently used last.
type Store = Mutex<Vec<(u64, Memo)>>;

static MEMOS: Store = Mutex::new(Vec::new());

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
    scrubbed_in(&MEMOS, id, kind, text, scrub)
}

fn scrubbed_in(
    store: &Store,
    id: u64,
    kind: Text,
    text: &str,
    scrub: impl FnOnce() -> String,
) -> String {
    if text.len() > MAX_TEXT {
        return scrub();
    }
    if let Some(v) = with_memo(store, id, |m| {
        m.texts[kind as usize].get(text).map(|v| v.to_string())
    }) {
        return v;
    }
    // Not locked while the rules run: they may scrub inner strings, and
    // other threads scrub theirs meanwhile.
    let out = scrub();
    with_memo(store, id, |m| {
        m.bytes += text.len() + out.len() + 64;
        m.texts[kind as usize].insert(text.into(), out.as_str().into());
    });
    out
}

/// `matches()`'s answer for `key` under the redactor `id`, remembered.
pub(super) fn key_matched(id: u64, key: &str, matches: impl FnOnce() -> bool) -> bool {
    key_matched_in(&MEMOS, id, key, matches)
}

fn key_matched_in(store: &Store, id: u64, key: &str, matches: impl FnOnce() -> bool) -> bool {
    if key.len() > MAX_TEXT {
        return matches();
    }
    if let Some(v) = with_memo(store, id, |m| m.key_matches.get(key).copied()) {
        return v;
    }
    let v = matches();
    with_memo(store, id, |m| {
        m.bytes += key.len() + 64;
        m.key_matches.insert(key.into(), v);
    });
    v
}

/// Runs `f` on the memo of redactor `id` (made, and the least recently
/// used one dropped, as needed; emptied past [`MAX_BYTES`]).
fn with_memo<T>(store: &Store, id: u64, f: impl FnOnce(&mut Memo) -> T) -> T {
    // A panic elsewhere while the lock was held left no entry half made:
    // each is inserted whole.
    let mut m = store.lock().unwrap_or_else(|e| e.into_inner());
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_remembered_text_is_not_scrubbed_again_and_redactors_do_not_share() {
        let store = Store::default();
        let runs = std::cell::Cell::new(0);
        let scrub = |id: u64, t: &str| {
            scrubbed_in(&store, id, Text::Scrubbed, t, || {
                runs.set(runs.get() + 1);
                format!("{id}:{t}")
            })
        };
        assert_eq!(scrub(1, "password=x"), "1:password=x");
        assert_eq!(scrub(1, "password=x"), "1:password=x");
        assert_eq!(scrub(2, "password=x"), "2:password=x");
        assert_eq!(runs.get(), 2);
        // What went through another rule is not taken for a scrub.
        let shapes = scrubbed_in(&store, 1, Text::ShapesHidden, "password=x", || "s".into());
        assert_eq!(shapes, "s");
        let long = "x".repeat(MAX_TEXT + 1);
        scrub(1, &long);
        scrub(1, &long);
        assert_eq!(runs.get(), 4);
    }

    #[test]
    fn a_key_is_matched_once_per_redactor() {
        let store = Store::default();
        let runs = std::cell::Cell::new(0);
        let matched = |id: u64, k: &str| {
            key_matched_in(&store, id, k, || {
                runs.set(runs.get() + 1);
                k.contains("pass")
            })
        };
        assert!(matched(3, "password"));
        assert!(matched(3, "password"));
        assert!(!matched(3, "name"));
        assert!(!matched(3, "name"));
        assert!(matched(4, "password"));
        assert_eq!(runs.get(), 3);
    }

    #[test]
    fn the_memo_starts_over_past_its_size_and_keeps_few_redactors() {
        let store = Store::default();
        for id in 0..(MAX_REDACTORS as u64 + 3) {
            key_matched_in(&store, id, "k", || true);
        }
        assert_eq!(store.lock().unwrap().len(), MAX_REDACTORS);
        let big = "y".repeat(MAX_TEXT - 8);
        for i in 0..(MAX_BYTES / MAX_TEXT) {
            scrubbed_in(
                &store,
                99,
                Text::Scrubbed,
                &format!("{i}{big}"),
                String::new,
            );
        }
        let held = store
            .lock()
            .unwrap()
            .iter()
            .find(|(i, _)| *i == 99)
            .map(|(_, m)| m.bytes);
        assert!(
            held.is_some_and(|b| b <= MAX_BYTES + 2 * MAX_TEXT),
            "{held:?}"
        );
    }
}
