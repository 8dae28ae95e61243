//! The Python bridge: kadet inputs and Python jinja2 filter files run in
//! the user's Python (`python3` on PATH, or `--python`), in ONE interpreter
//! per compile that speaks JSON lines with strata. The interpreter runs the
//! shim in `python_bridge.py` (shipped inside the binary), which stands in
//! for the `kapitan.*` modules generators import, so only the `kadet`
//! package from PyPI is needed. Python is started on first use: a compile
//! without kadet or filter files never needs it.

use crate::value::{Map, Value};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const SHIM: &str = include_str!("python_bridge.py");

/// The program run when neither `--python` nor `STRATA_PYTHON` names one.
pub const DEFAULT_PYTHON: &str = "python3";

/// How every "the interpreter is gone" error starts; after one, later
/// calls fail at once instead of writing to a dead pipe.
const STOPPED: &str = "the Python bridge stopped";

const INSTALL_HINT: &str =
    "install Python 3 and the kadet package (`python3 -m pip install kadet`), or pass --python PATH to an interpreter that has it";

/// Which interpreter the bridge runs.
#[derive(Debug, Clone, Default)]
pub struct PythonOptions {
    /// `--python`; else `STRATA_PYTHON`; else `python3` on PATH.
    pub python: Option<PathBuf>,
    /// A Python file whose functions become Jinja2 filters (Kapitan's
    /// `--jinja2-filters`); the caller leaves out a default that is absent.
    pub jinja2_filters: Option<PathBuf>,
}

impl PythonOptions {
    pub fn program(&self) -> PathBuf {
        self.python
            .clone()
            .or_else(|| std::env::var_os("STRATA_PYTHON").map(PathBuf::from))
            .unwrap_or_else(|| PathBuf::from(DEFAULT_PYTHON))
    }
}

/// A bridge failure, with what to do about it when strata knows.
#[derive(Debug, Clone)]
pub struct BridgeError {
    pub message: String,
    pub hint: Option<String>,
}

impl BridgeError {
    fn new(m: impl Into<String>) -> Self {
        BridgeError {
            message: m.into(),
            hint: None,
        }
    }
}

impl std::fmt::Display for BridgeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.hint {
            Some(h) => write!(f, "{} ({h})", self.message),
            None => f.write_str(&self.message),
        }
    }
}

struct Proc {
    child: Child,
    /// None only while the bridge is being closed.
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    /// Filter files loaded so far and the names they define.
    filters: Vec<(PathBuf, Vec<String>)>,
    /// What the last call ran (its `what`), for the exit's warning.
    last: String,
    /// Ends (is disconnected) when everything Python printed was passed on.
    printed: Option<std::sync::mpsc::Receiver<()>>,
}

/// How long the interpreter may take to exit once its stdin is closed:
/// work a kadet input or filter left for the interpreter's exit (an
/// `atexit` handler, a non-daemon thread) held the compile for as long as
/// it ran. Exiting takes a fraction of a second.
fn exit_grace() -> Duration {
    super::child::per_program_timeout().min(Duration::from_secs(10))
}

enum State {
    NotStarted,
    Running(Box<Proc>),
    /// Start failed or the interpreter died: every later call gets this.
    Failed(BridgeError),
}

/// One lazily started interpreter shared by all targets of a compile;
/// requests are serialised (Python runs one at a time anyway).
pub struct Bridge {
    program: PathBuf,
    jinja2_filters: Option<PathBuf>,
    /// The filter file's function names, looked up once.
    filter_names: std::sync::OnceLock<Result<FilterNames, BridgeError>>,
    /// The inventory every kadet input sees as `inventory_global()`.
    inventory: Arc<std::collections::BTreeMap<String, Value>>,
    state: Mutex<State>,
}

impl Bridge {
    pub fn new(
        opts: &PythonOptions,
        inventory: Arc<std::collections::BTreeMap<String, Value>>,
    ) -> Self {
        Bridge {
            program: opts.program(),
            jinja2_filters: opts.jinja2_filters.clone(),
            filter_names: std::sync::OnceLock::new(),
            inventory,
            state: Mutex::new(State::NotStarted),
        }
    }

    fn start(&self) -> Result<Proc, BridgeError> {
        let prog = self.program.display().to_string();
        let mut cmd = Command::new(&self.program);
        // Started by the first kadet input or filter call, inside its
        // entry's (confined or not) compile: every target of a compile is
        // confined alike.
        if super::confine::active() {
            super::child::withhold_secret_env(&mut cmd);
        }
        let mut child = cmd
            .arg("-u")
            .arg("-c")
            .arg(SHIM)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own process group, killed whole when a call or the exit
            // runs past its time (processes a kadet input started too).
            .process_group(0)
            .spawn()
            .map_err(|e| {
                let msg = if e.kind() == std::io::ErrorKind::NotFound {
                    format!("Python is needed but `{prog}` was not found")
                } else {
                    format!("cannot start `{prog}`: {e}")
                };
                BridgeError {
                    message: msg,
                    hint: Some(INSTALL_HINT.into()),
                }
            })?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(BridgeError::new(format!("cannot talk to `{prog}`")));
        };
        let printed = child.stderr.take().and_then(pass_on_output);
        let mut p = Proc {
            child,
            stdin: Some(stdin),
            stdout: BufReader::new(stdout),
            filters: Vec::new(),
            last: "its start".to_string(),
            printed,
        };
        let hello = read_reply(&mut p, &prog).map_err(|e| BridgeError {
            message: format!(
                "`{prog}` did not start strata's Python bridge: {}",
                e.message
            ),
            hint: Some("strata needs Python 3.10 or newer".into()),
        })?;
        match hello.get("ready").and_then(|v| v.as_bool()) {
            Some(true) => {}
            Some(false) => {
                let v = hello.get("python").and_then(|v| v.as_str()).unwrap_or("?");
                return Err(BridgeError {
                    message: format!(
                        "`{prog}` is Python {v}; strata's Python bridge needs 3.10 or newer"
                    ),
                    hint: Some(
                        "pass --python PATH to a newer interpreter (with the kadet package)".into(),
                    ),
                });
            }
            None => {
                return Err(BridgeError::new(format!(
                    "`{prog}` answered the bridge's handshake unexpectedly"
                )))
            }
        }
        let init = with_value(&serde_json::json!({"op": "init"}), "inventory", |out| {
            python_json_map(self.inventory.iter(), out)
        });
        call_line(&mut p, &prog, init)?;
        Ok(p)
    }

    /// Runs `f` with the running interpreter, starting it first if needed.
    /// `what` names the call: when the interpreter dies during it, every
    /// later call (of any target) says which one it died in.
    fn with_proc<T>(
        &self,
        what: &dyn Fn() -> String,
        f: impl FnOnce(&mut Proc, &str) -> Result<T, BridgeError>,
    ) -> Result<T, BridgeError> {
        let prog = self.program.display().to_string();
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if let State::NotStarted = *st {
            *st = match self.start() {
                Ok(p) => State::Running(Box::new(p)),
                Err(e) => State::Failed(e),
            };
        }
        match &mut *st {
            State::Running(p) => {
                // A kadet input or filter that never returns (`while True`)
                // is killed; the next call starts a new interpreter.
                let limit = super::child::timeout();
                p.last = what();
                let dog = super::child::Watchdog::start(p.child.id(), true, limit);
                let r = f(p, &prog);
                if dog.finish() {
                    let _ = p.child.wait();
                    *st = State::NotStarted;
                    return Err(BridgeError::new(format!(
                        "`{prog}` running {} {}",
                        what(),
                        super::child::timed_out_message(limit)
                    )));
                }
                if let Err(e) = &r {
                    if e.message.starts_with(STOPPED) {
                        let mut later = e.clone();
                        later.message =
                            format!("{} (it stopped while running {})", e.message, what());
                        *st = State::Failed(later);
                    }
                }
                r
            }
            State::Failed(e) => Err(e.clone()),
            State::NotStarted => unreachable!("started above"),
        }
    }

    /// Runs one kadet input (`input_path`, a directory with `__init__.py`)
    /// for `target` as Kapitan's `Kadet.compile_file` does; returns the
    /// output files' values, or None when `main()` returned nothing.
    pub fn kadet(
        &self,
        target: &str,
        input_path: &Path,
        input_params: &Map,
        compile_path: &Path,
        search_paths: &[PathBuf],
        host: &dyn Fn(&serde_json::Value) -> serde_json::Value,
    ) -> Result<Option<Map>, BridgeError> {
        let what = || format!("{} for target {target}", input_path.display());
        self.with_proc(&what, |p, prog| {
            let req = serde_json::json!({
                "op": "kadet",
                "target": target,
                "input_path": input_path,
                "compile_path": compile_path,
                "search_paths": search_paths,
            });
            let req = with_value(&req, "input_params", |out| {
                python_json_map(input_params.iter(), out)
            });
            let reply = call_line_with_host(p, prog, req, host)?;
            if let Some(e) = reply.get("missing").and_then(|v| v.as_str()) {
                return Err(BridgeError {
                    message: format!("the kadet package is not available to `{prog}` ({e})"),
                    hint: Some(format!(
                        "run `{prog} -m pip install kadet`, or pass --python PATH to an interpreter that has it"
                    )),
                });
            }
            match reply.get("output") {
                Some(serde_json::Value::Object(_)) => {
                    match Value::from_json(&reply["output"]) {
                        Value::Map(m) => Ok(Some(m)),
                        _ => Ok(None),
                    }
                }
                _ => Ok(None),
            }
        })
    }

    /// The filters of the `--jinja2-filters` file, loaded on first use. When
    /// Python cannot start, the file's top-level `def`s are still filters,
    /// which fail with the reason when a template uses one: templates that
    /// do not use them render without Python.
    pub fn jinja_filters(&self) -> Result<FilterNames, BridgeError> {
        self.filter_names
            .get_or_init(|| match &self.jinja2_filters {
                None => Ok(FilterNames::default()),
                Some(path) if !path.is_file() => Err(BridgeError {
                    message: format!("jinja2 filter file {} does not exist", path.display()),
                    hint: Some("fix --jinja2-filters or `jinja2-filters` in .kapitan".into()),
                }),
                Some(path) => self.filters_at(path),
            })
            .clone()
    }

    /// The filters a Python file defines (see [`Bridge::jinja_filters`]).
    pub fn filters_at(&self, path: &Path) -> Result<FilterNames, BridgeError> {
        if let Err(e) = self.with_proc(&|| "its start".to_string(), |_, _| Ok(())) {
            let text = std::fs::read_to_string(path).unwrap_or_default();
            return Ok(FilterNames {
                path: path.to_path_buf(),
                names: static_defs(&text),
                unavailable: Some(e),
            });
        }
        let names = self.load_filters(path).map_err(|e| BridgeError {
            message: format!(
                "cannot load jinja2 filters from {}: {}",
                path.display(),
                e.message
            ),
            hint: e.hint,
        })?;
        Ok(FilterNames {
            path: path.to_path_buf(),
            names,
            unavailable: None,
        })
    }

    /// Loads a Python jinja2 filter file (Kapitan's `load_module_from_path`)
    /// once; returns the names of the functions it defines.
    pub fn load_filters(&self, path: &Path) -> Result<Vec<String>, BridgeError> {
        let what = || format!("the jinja2 filter file {}", path.display());
        self.with_proc(&what, |p, prog| {
            if let Some((_, names)) = p.filters.iter().find(|(f, _)| f == path) {
                return Ok(names.clone());
            }
            let req = serde_json::json!({"op": "load_filters", "path": path});
            let reply = call(p, prog, &req)?;
            let names: Vec<String> = reply["names"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|n| n.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default();
            p.filters.push((path.to_path_buf(), names.clone()));
            Ok(names)
        })
    }

    /// Calls a loaded filter function; the arguments travel in Python's
    /// JSON dialect, so `.inf` and `.nan` arrive as floats, as in Kapitan.
    pub fn call_filter(
        &self,
        name: &str,
        args: &[Value],
    ) -> Result<serde_json::Value, BridgeError> {
        let what = || format!("the jinja2 filter `{name}`");
        self.with_proc(&what, |p, prog| {
            let req = serde_json::json!({"op": "filter", "name": name});
            let line = with_value(&req, "args", |out| {
                out.push('[');
                for (i, a) in args.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    python_json(a, out);
                }
                out.push(']');
            });
            let mut reply = call_line(p, prog, line)?;
            Ok(reply["value"].take())
        })
    }
}

/// The filters a Python filter file defines.
#[derive(Debug, Clone, Default)]
pub struct FilterNames {
    pub path: PathBuf,
    pub names: Vec<String>,
    /// Why Python is not available, when it is not.
    pub unavailable: Option<BridgeError>,
}

/// Top-level `def name(` lines of a Python file: the filter names when
/// Python itself is not there to say.
fn static_defs(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| {
            let rest = l
                .strip_prefix("def ")
                .or_else(|| l.strip_prefix("async def "))?;
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            (!name.is_empty()).then_some(name)
        })
        .collect()
}

/// Registers a filter file's functions on a Jinja2 environment; each call
/// goes through the bridge with JSON arguments.
pub fn add_filters(
    bridge: &Arc<Bridge>,
    filters: &FilterNames,
    env: &mut minijinja::Environment<'static>,
) {
    use crate::compile::jinja::{from_template_value, to_template_value};
    use minijinja::{Error, ErrorKind};
    for name in &filters.names {
        let b = bridge.clone();
        let n = name.clone();
        let path = filters.path.display().to_string();
        let unavailable = filters.unavailable.clone();
        env.add_filter(
            name.clone(),
            move |args: minijinja::value::Rest<minijinja::Value>| -> Result<minijinja::Value, Error> {
                if let Some(e) = &unavailable {
                    return Err(Error::new(
                        ErrorKind::InvalidOperation,
                        format!("filter `{n}` is defined in {path}, which needs Python: {e}"),
                    ));
                }
                let values: Vec<Value> = args.iter().map(from_template_value).collect();
                b.call_filter(&n, &values)
                    .map(|v| to_template_value(&Value::from_json(&v)))
                    .map_err(|e| {
                        Error::new(
                            ErrorKind::InvalidOperation,
                            format!("filter `{n}` from {path} failed: {e}"),
                        )
                    })
            },
        );
    }
}

impl Bridge {
    /// Ends the interpreter, if it runs: closes its stdin (which ends the
    /// shim's read loop) and waits [`exit_grace`] at most for it to exit,
    /// then kills its process group. Returns a warning naming the last call
    /// when it had to be killed: the outputs were all written by then.
    pub fn close(&self) -> Option<String> {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if !matches!(*st, State::Running(_)) {
            return None;
        }
        let closed = State::Failed(BridgeError::new(format!("{STOPPED}: it was closed")));
        let State::Running(mut p) = std::mem::replace(&mut *st, closed) else {
            return None;
        };
        drop(p.stdin.take());
        let limit = exit_grace();
        let dog = super::child::Watchdog::start(p.child.id(), true, limit);
        let _ = p.child.wait();
        let finished = dog.finish();
        // Its last lines are shown before strata goes on (a process it
        // started may still hold the pipe: not waited for long).
        if let Some(printed) = p.printed.take() {
            let _ = printed.recv_timeout(Duration::from_secs(2));
        }
        if !finished {
            return None;
        }
        Some(format!(
            "the Python bridge (`{}`) did not exit within {} s of its last call ({}) and was stopped: \
             work left for the interpreter's exit (an `atexit` handler, a thread that is not a daemon) \
             did not run to its end; every output had been written",
            self.program.display(),
            limit.as_secs(),
            p.last
        ))
    }
}

impl Drop for Bridge {
    fn drop(&mut self) {
        // Bounded as [`Bridge::close`]; a compile that failed has its error.
        let _ = self.close();
    }
}

/// What Python prints (user code's `print`, tracebacks: the shim sends
/// stdout there) goes on line by line through
/// [`crate::diagnostics::program_output`], which a review masks. The
/// receiver is disconnected at the end.
fn pass_on_output(stderr: std::process::ChildStderr) -> Option<std::sync::mpsc::Receiver<()>> {
    let (done, printed) = std::sync::mpsc::channel::<()>();
    std::thread::Builder::new()
        .name("python-output".into())
        .spawn(move || {
            let _done = done;
            pass_on_lines(
                BufReader::new(stderr),
                MAX_OUTPUT_LINE,
                MAX_OUTPUT,
                |line, cut| match cut {
                    None => crate::diagnostics::program_output(line),
                    Some(note) => {
                        crate::diagnostics::program_output_cut(line, MAX_OUTPUT_LINE / 16, &note)
                    }
                },
            );
        })
        .ok()?;
    Some(printed)
}

/// The longest line of program output passed on whole (so a print
/// without a newline takes bounded memory).
const MAX_OUTPUT_LINE: usize = 16 << 20;

/// What one Python process's output may put in the log in all: a kadet
/// input printing in a loop wrote 400 MB into the job log in 26 s (probe
/// 37), and could go on for the program time limit (300 s).
const MAX_OUTPUT: usize = 16 << 20;

/// Passes each line of `r` to `out` whole, so a mask sees every value it
/// holds (a line passed on in pieces showed a value split across two;
/// re-probe 16). Of a line longer than `max`, only its first `max` bytes
/// go on, with the note to show in place of their last sixteenth (where
/// a value may begin that the cut splits: dropped after masking). Past
/// `total` bytes, one line says so and the rest is read and dropped (so
/// the program is not blocked on a full pipe).
fn pass_on_lines(
    mut r: impl BufRead,
    max: usize,
    total: usize,
    mut out: impl FnMut(&str, Option<String>),
) {
    use std::io::Read;
    let mut line = Vec::new();
    let mut sent = 0usize;
    loop {
        line.clear();
        let read = (&mut r).take(max as u64).read_until(b'\n', &mut line);
        if let Ok(n) = read {
            if n > 0 && sent >= total {
                if sent != usize::MAX {
                    sent = usize::MAX;
                    out(
                        &format!("… (the program printed more than {total} bytes: the rest is not shown)\n"),
                        None,
                    );
                }
                continue;
            }
            sent += n;
        }
        match read {
            Ok(0) | Err(_) => return,
            Ok(n) if n < max || line.ends_with(b"\n") => out(&String::from_utf8_lossy(&line), None),
            Ok(_) => {
                let mut rest = 0usize;
                let mut skipped = Vec::new();
                loop {
                    skipped.clear();
                    match (&mut r).take(max as u64).read_until(b'\n', &mut skipped) {
                        Ok(0) | Err(_) => break,
                        Ok(k) => {
                            rest += k;
                            if skipped.ends_with(b"\n") {
                                break;
                            }
                        }
                    }
                }
                let note = format!(
                    "… (a line of more than {max} bytes: the rest, about {} bytes, is not shown)\n",
                    max / 16 + rest
                );
                out(&String::from_utf8_lossy(&line), Some(note));
            }
        }
    }
}

fn read_reply(p: &mut Proc, prog: &str) -> Result<serde_json::Value, BridgeError> {
    let mut line = String::new();
    match p.stdout.read_line(&mut line) {
        Ok(0) | Err(_) => {
            let status = p
                .child
                .try_wait()
                .ok()
                .flatten()
                .map(|s| format!(" ({s})"))
                .unwrap_or_default();
            Err(BridgeError::new(format!(
                "{STOPPED}{status}: `{prog}` exited; see its messages above"
            )))
        }
        Ok(_) => serde_json::from_str(&line).map_err(|e| {
            BridgeError::new(format!("the Python bridge sent an unreadable reply: {e}"))
        }),
    }
}

/// `req` (a JSON object) with one more member holding inventory data, in
/// the JSON dialect of Python's `json`: `.inf`/`.nan` travel as `Infinity`
/// and `NaN` (which `json.loads` reads back as floats, so a kadet input sees
/// what Kapitan would hand it), where serde_json would write `null`.
fn with_value(req: &serde_json::Value, key: &str, value: impl FnOnce(&mut String)) -> String {
    let mut line = req.to_string();
    line.pop(); // the closing brace
    if !line.ends_with('{') {
        line.push(',');
    }
    line.push_str(&serde_json::Value::String(key.into()).to_string());
    line.push(':');
    value(&mut line);
    line.push('}');
    line
}

fn python_json(v: &Value, out: &mut String) {
    match v {
        Value::Float(f) if f.is_nan() => out.push_str("NaN"),
        Value::Float(f) if f.is_infinite() => {
            out.push_str(if *f > 0.0 { "Infinity" } else { "-Infinity" })
        }
        Value::List(l) => {
            out.push('[');
            for (i, x) in l.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                python_json(x, out);
            }
            out.push(']');
        }
        Value::Map(m) => python_json_map(m.iter(), out),
        scalar => out.push_str(&serde_json::to_string(scalar).unwrap_or_else(|_| "null".into())),
    }
}

fn python_json_map<'a>(entries: impl Iterator<Item = (&'a String, &'a Value)>, out: &mut String) {
    out.push('{');
    for (i, (k, x)) in entries.enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&serde_json::Value::String(k.clone()).to_string());
        out.push(':');
        python_json(x, out);
    }
    out.push('}');
}

fn call(
    p: &mut Proc,
    prog: &str,
    req: &serde_json::Value,
) -> Result<serde_json::Value, BridgeError> {
    call_line(p, prog, req.to_string())
}

fn call_line(p: &mut Proc, prog: &str, line: String) -> Result<serde_json::Value, BridgeError> {
    call_line_with_host(
        p,
        prog,
        line,
        &|_| serde_json::json!({"ok": false, "error": "strata answers no request here"}),
    )
}

fn send_line(p: &mut Proc, prog: &str, line: String) -> Result<(), BridgeError> {
    let mut line = line.into_bytes();
    line.push(b'\n');
    let sent = match p.stdin.as_mut() {
        Some(s) => s.write_all(&line).and_then(|_| s.flush()).is_ok(),
        None => false,
    };
    if sent {
        Ok(())
    } else {
        Err(BridgeError::new(format!(
            "{STOPPED}: `{prog}` exited; see its messages above"
        )))
    }
}

/// Sends `line` and waits for its reply, answering the bridge's requests
/// to strata on the way (`{"host": ...}`: Kapitan's `HelmChart` asks strata
/// to run helm) with `host`'s answer.
fn call_line_with_host(
    p: &mut Proc,
    prog: &str,
    line: String,
    host: &dyn Fn(&serde_json::Value) -> serde_json::Value,
) -> Result<serde_json::Value, BridgeError> {
    send_line(p, prog, line)?;
    let mut reply = read_reply(p, prog)?;
    while let Some(req) = reply.get("host") {
        let answer = host(req);
        send_line(p, prog, answer.to_string())?;
        reply = read_reply(p, prog)?;
    }
    if reply.get("ok").and_then(|v| v.as_bool()) == Some(true) {
        Ok(reply)
    } else {
        Err(BridgeError::new(
            reply
                .get("error")
                .and_then(|v| v.as_str())
                .unwrap_or("the Python bridge failed without a message")
                .to_string(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Re-probe 16 (program-output-mask-split-at-64k-line-chunks): a long
    /// line went on in 64 KiB pieces, each masked alone, so a value across
    /// a boundary was shown whole. Lines go on whole; of one past the
    /// bound, its first part goes on with a note for what is not shown.
    #[test]
    fn output_lines_go_on_whole_or_cut_with_a_note() {
        let text = format!(
            "short\n{}SECRETVALUE tail\n{}SECRETVALUE{}\nlast",
            "A".repeat(200),
            "B".repeat(250),
            "C".repeat(500)
        );
        let mut shown = Vec::new();
        pass_on_lines(std::io::Cursor::new(text), 256, usize::MAX, |l, cut| {
            shown.push((l.to_string(), cut))
        });
        assert_eq!(shown.len(), 4, "{shown:?}");
        assert_eq!(shown[0], ("short\n".to_string(), None));
        assert_eq!(
            shown[1],
            (format!("{}SECRETVALUE tail\n", "A".repeat(200)), None)
        );
        assert_eq!(shown[2].0, format!("{}SECRET", "B".repeat(250)));
        assert_eq!(
            shown[2].1.as_deref(),
            Some("… (a line of more than 256 bytes: the rest, about 522 bytes, is not shown)\n")
        );
        assert_eq!(shown[3], ("last".to_string(), None));
    }

    #[test]
    fn output_stops_after_the_total_with_one_note() {
        let text = "0123456789\n".repeat(100_000);
        let mut shown = Vec::new();
        pass_on_lines(std::io::Cursor::new(text), 256, 1000, |l, cut| {
            shown.push((l.to_string(), cut))
        });
        assert_eq!(shown.len(), 92, "{:?}", &shown[shown.len() - 3..]);
        assert!(shown[..91]
            .iter()
            .all(|(l, c)| l == "0123456789\n" && c.is_none()));
        assert_eq!(
            shown[91],
            (
                "… (the program printed more than 1000 bytes: the rest is not shown)\n".to_string(),
                None
            )
        );
    }

    #[test]
    fn bridge_requests_carry_inf_and_nan_as_python_json_reads_them() {
        let mut params = Map::default();
        params.insert(
            "lim".into(),
            Value::List(vec![
                Value::Float(f64::INFINITY),
                Value::Float(-f64::INFINITY),
            ]),
        );
        params.insert("r".into(), Value::Float(f64::NAN));
        params.insert("s".into(), Value::String("a\"b".into()));
        params.insert("i".into(), Value::Int(3));
        let line = with_value(&serde_json::json!({"op": "kadet"}), "input_params", |out| {
            python_json_map(params.iter(), out)
        });
        assert_eq!(
            line,
            r#"{"op":"kadet","input_params":{"lim":[Infinity,-Infinity],"r":NaN,"s":"a\"b","i":3}}"#
        );
        let empty = with_value(&serde_json::json!({}), "k", |out| {
            python_json(&Value::Null, out)
        });
        assert_eq!(empty, r#"{"k":null}"#);
    }

    #[test]
    fn top_level_defs_are_filter_names() {
        let src = "import os\ndef shout(s):\n    def inner(): pass\n    return s\nasync def later(x): pass\nclass C:\n    def method(self): pass\n";
        assert_eq!(static_defs(src), vec!["shout", "later"]);
    }

    #[test]
    fn a_missing_interpreter_is_reported_with_the_install_hint() {
        let b = Bridge::new(
            &PythonOptions {
                python: Some(PathBuf::from("/nonexistent/python3")),
                jinja2_filters: None,
            },
            Arc::new(Default::default()),
        );
        let e = b
            .kadet(
                "t",
                Path::new("/x"),
                &Map::default(),
                Path::new("/o"),
                &[],
                &|_| serde_json::Value::Null,
            )
            .unwrap_err();
        assert!(e.message.contains("/nonexistent/python3"), "{e}");
        assert!(e.to_string().contains("pip install kadet"), "{e}");
        // The failure is remembered: no second start attempt.
        assert!(b.load_filters(Path::new("/f.py")).is_err());
    }
}
