//! A stable-toolchain fuzz driver: random mutation (byte flips, YAML and
//! reference tokens, chunk deletion, duplication and splicing) of seeds
//! taken from tests/fixtures, for when cargo-fuzz/libFuzzer cannot run.
//! It has no coverage feedback, so it finds less than libFuzzer would.
//!
//! `mutate TARGET SECONDS [SEED]` runs one target for that long and prints
//! `target=... execs=... crashes=... over_1s=... max_ms=...`; inputs that
//! panic or take over 1 s are saved under fuzz/artifacts/TARGET/.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

const TOKENS: &[&str] = &[
    "${",
    "}",
    "${a}",
    "${b:c}",
    "\\${",
    "::",
    "&a ",
    "*a",
    "<<: *a\n",
    "[",
    "]",
    "{",
    "}",
    "- ",
    ": ",
    "\n",
    "\n  ",
    "\n    ",
    "---\n",
    "!!str ",
    "!!int ",
    "? ",
    "'",
    "\"",
    "~",
    "=",
    "classes:\n  - c0\n",
    "parameters:\n",
    "#@ ",
    "#@overlay/match by=",
    "#@ def f():\n",
    "\n===\n",
    "kind: Secret\n",
    "password: ",
    "ghp_",
    "-----BEGIN PRIVATE KEY-----\n",
    ".inf",
    ".nan",
    "0x",
    "1e400",
    "\u{0}",
    "\u{feff}",
    "é",
];

fn mutate(rng: &mut Rng, seeds: &[Vec<u8>], input: &mut Vec<u8>) {
    for _ in 0..=rng.below(4) {
        let len = input.len();
        match rng.below(7) {
            0 if len > 0 => {
                let i = rng.below(len);
                input[i] ^= 1 << rng.below(8);
            }
            1 => {
                let t = TOKENS[rng.below(TOKENS.len())].as_bytes();
                let at = rng.below(len + 1);
                input.splice(at..at, t.iter().copied());
            }
            2 if len > 1 => {
                let a = rng.below(len);
                let b = (a + 1 + rng.below(64)).min(len);
                input.drain(a..b);
            }
            3 if len > 1 => {
                let a = rng.below(len);
                let b = (a + 1 + rng.below(256)).min(len);
                let chunk: Vec<u8> = input[a..b].to_vec();
                let at = rng.below(len + 1);
                input.splice(at..at, chunk);
            }
            4 => {
                let other = &seeds[rng.below(seeds.len())];
                if !other.is_empty() {
                    let a = rng.below(other.len());
                    let b = (a + 1 + rng.below(512)).min(other.len());
                    let at = rng.below(len + 1);
                    input.splice(at..at, other[a..b].iter().copied());
                }
            }
            5 if len > 0 => {
                let i = rng.below(len);
                input[i] = b" \n:-{}[]$&*!|>'\"#"[rng.below(17)];
            }
            _ => {
                // Deepen: repeat a line's indentation step.
                let at = rng.below(len + 1);
                let n = 1 + rng.below(64);
                let piece = ["- ", "  ", "[", "{a: "][rng.below(4)].repeat(n);
                input.splice(at..at, piece.into_bytes());
            }
        }
    }
    input.truncate(1 << 16);
}

fn seeds(root: &Path, target: &str) -> Vec<Vec<u8>> {
    let dirs: &[&str] = match target {
        "overlay" => &["tests/fixtures/template"],
        "redact" => &["tests/fixtures/review", "tests/fixtures/order"],
        _ => &[
            "tests/fixtures/inventory",
            "tests/fixtures/hostile",
            "tests/fixtures/commodore",
        ],
    };
    let mut out = Vec::new();
    for d in dirs {
        let Ok(files) = strata::fswalk::files_below(&root.join(d), &strata::fswalk::not_git) else {
            continue;
        };
        for f in files {
            let yamlish = f
                .extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| matches!(e, "yml" | "yaml" | "txt" | "star"));
            if let (true, Ok(b)) = (yamlish, std::fs::read(&f)) {
                if b.len() <= 1 << 16 {
                    out.push(b);
                }
            }
        }
    }
    if out.is_empty() {
        out.push(b"parameters:\n  a: ${b}\n  b: 1\n".to_vec());
    }
    out
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let target = args.get(1).cloned().unwrap_or_else(|| "yaml".into());
    let seconds: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(10);
    let seed: u64 = args
        .get(3)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_1919);
    let run: fn(&[u8]) = match target.as_str() {
        "yaml" => strata_fuzz::yaml,
        "refs" => strata_fuzz::refs,
        "inventory" => strata_fuzz::inventory,
        "overlay" => strata_fuzz::overlay,
        "redact" => strata_fuzz::redact,
        other => {
            eprintln!("unknown target {other}: yaml, refs, inventory, overlay, redact");
            std::process::exit(2);
        }
    };
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let corpus = seeds(&root, &target);
    let artifacts = root.join("fuzz/artifacts").join(&target);
    std::panic::set_hook(Box::new(|_| {}));
    let mut rng = Rng(seed | 1);
    let (mut execs, mut crashes, mut slow) = (0u64, 0u64, 0u64);
    let mut max = Duration::ZERO;
    let start = Instant::now();
    let limit = Duration::from_secs(seconds);
    while start.elapsed() < limit {
        let mut input = corpus[rng.below(corpus.len())].clone();
        // Every seed once as it is, then mutated.
        if execs >= corpus.len() as u64 {
            mutate(&mut rng, &corpus, &mut input);
        }
        let t0 = Instant::now();
        let ok = std::panic::catch_unwind(|| run(&input)).is_ok();
        let took = t0.elapsed();
        execs += 1;
        max = max.max(took);
        if took > Duration::from_secs(1) {
            slow += 1;
            let _ = std::fs::create_dir_all(&artifacts);
            let _ = std::fs::write(artifacts.join(format!("slow-{seed}-{execs}")), &input);
        }
        if !ok {
            crashes += 1;
            let _ = std::fs::create_dir_all(&artifacts);
            let _ = std::fs::write(artifacts.join(format!("crash-{seed}-{execs}")), &input);
        }
    }
    println!(
        "target={target} execs={execs} crashes={crashes} over_1s={slow} max_ms={} seeds={}",
        max.as_millis(),
        corpus.len()
    );
    if crashes > 0 {
        std::process::exit(1);
    }
}
