//! The gate's log: one line per event on standard error, in the Python server's format
//! ("2006-01-02 15:04:05,000 LEVEL ziggurat.gate: message"), so that an operator reading the
//! server's log (the gate's stderr is the server's) sees one log, not two styles. Refusals
//! print at most one line per reason per [`REFUSAL_WINDOW`]: a client that opens thousands of
//! silent streams would otherwise write a line for each of them.

use std::collections::HashMap;
use std::io::Write;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::config::Level;

pub const REFUSAL_WINDOW: Duration = Duration::from_secs(10);

/// The lines of one refusal reason: when one last printed, and how many were left out since.
struct ReasonLines {
    printed: Instant,
    held: u64,
}

struct State {
    out: Box<dyn Write + Send>,
    reasons: HashMap<String, ReasonLines>,
}

pub struct Logger {
    min: Level,
    state: Mutex<State>,
    /// The wall clock's text for a line (a parameter so that tests can fix it).
    stamp: fn() -> String,
}

impl Logger {
    pub fn new(out: Box<dyn Write + Send>, min: Level) -> Logger {
        Logger { min, state: Mutex::new(State { out, reasons: HashMap::new() }), stamp: local_stamp }
    }

    pub fn enabled(&self, level: Level) -> bool {
        level >= self.min
    }

    pub fn log(&self, level: Level, message: &str) {
        if !self.enabled(level) {
            return;
        }
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        self.write(&mut state, level, message);
    }

    pub fn debug(&self, message: &str) {
        self.log(Level::Debug, message)
    }
    pub fn info(&self, message: &str) {
        self.log(Level::Info, message)
    }
    pub fn warning(&self, message: &str) {
        self.log(Level::Warning, message)
    }

    /// One line; a message never spans lines (a client-supplied string could otherwise
    /// forge log lines).
    fn write(&self, state: &mut State, level: Level, message: &str) {
        let line = format!("{} {} ziggurat.gate: {}\n", (self.stamp)(), level.name(), message.replace('\n', "\\n"));
        let _ = state.out.write_all(line.as_bytes());
        let _ = state.out.flush();
    }

    /// Logs a refused or closed call as a warning, at most one line per reason per
    /// [`REFUSAL_WINDOW`]; the first line after a quiet window says how many were left out.
    /// `message` is only built when the line is printed.
    pub fn refusal(&self, reason: &str, message: impl FnOnce() -> String) {
        self.refusal_at(Instant::now(), reason, message)
    }

    pub fn refusal_at(&self, now: Instant, reason: &str, message: impl FnOnce() -> String) {
        if !self.enabled(Level::Warning) {
            return;
        }
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let held = match state.reasons.get_mut(reason) {
            Some(kind) if now.duration_since(kind.printed) < REFUSAL_WINDOW => {
                kind.held += 1;
                return;
            }
            Some(kind) => {
                let held = kind.held;
                kind.printed = now;
                kind.held = 0;
                held
            }
            None => {
                state.reasons.insert(reason.to_string(), ReasonLines { printed: now, held: 0 });
                0
            }
        };
        let mut text = message();
        if held > 0 {
            text.push_str(&format!(" [and {held} more like this before, not printed]"));
        }
        self.write(&mut state, Level::Warning, &text);
    }

    /// Prints, one line per reason, the refusals still held back (at exit).
    pub fn flush(&self) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let mut lines = Vec::new();
        for (reason, kind) in state.reasons.iter_mut() {
            if kind.held > 0 {
                lines.push(format!("{} more refusals ({reason}) were not printed", kind.held));
                kind.held = 0;
            }
        }
        lines.sort();
        for line in lines {
            self.write(&mut state, Level::Warning, &line);
        }
    }
}

/// Local time as "2006-01-02 15:04:05,000" (Python logging's asctime).
fn local_stamp() -> String {
    let since = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs() as libc::time_t;
    // SAFETY: localtime_r writes only into `tm`, which is a plain C struct we own.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    unsafe { libc::localtime_r(&secs, &mut tm) };
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02},{:03}",
        tm.tm_year + 1900,
        tm.tm_mon + 1,
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec,
        since.subsec_millis()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);

    impl Write for Buffer {
        fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(data);
            Ok(data.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Buffer {
        fn lines(&self) -> Vec<String> {
            String::from_utf8(self.0.lock().unwrap().clone()).unwrap().lines().map(String::from).collect()
        }
    }

    fn logger(min: Level) -> (Logger, Buffer) {
        let buffer = Buffer::default();
        let mut log = Logger::new(Box::new(buffer.clone()), min);
        log.stamp = || "2026-12-02 01:02:03,456".to_string();
        (log, buffer)
    }

    #[test]
    fn lines_have_the_python_servers_format() {
        let (log, out) = logger(Level::Info);
        log.info("listening on 127.0.0.1:1\nforged line");
        assert_eq!(out.lines(), ["2026-12-02 01:02:03,456 INFO ziggurat.gate: listening on 127.0.0.1:1\\nforged line"]);
        let stamp = local_stamp();
        assert_eq!(stamp.len(), 23, "{stamp}");
        assert_eq!(&stamp[19..20], ",");
    }

    #[test]
    fn the_log_level_hides_lower_lines() {
        let (log, out) = logger(Level::Warning);
        log.debug("d");
        log.info("i");
        log.warning("w");
        log.log(Level::Error, "e");
        log.refusal("R", || "r".into());
        let lines = out.lines();
        assert_eq!(lines.len(), 3);
        assert!(lines[0].ends_with("WARNING ziggurat.gate: w"));
        assert!(lines[1].ends_with("ERROR ziggurat.gate: e"));
        let (quiet, out) = logger(Level::Error);
        quiet.refusal("R", || "r".into());
        assert!(out.lines().is_empty());
    }

    #[test]
    fn refusals_print_one_line_per_reason_per_ten_seconds() {
        let (log, out) = logger(Level::Info);
        let start = Instant::now();
        for i in 0..5 {
            log.refusal_at(start + Duration::from_millis(i), "A", || format!("a{i}"));
        }
        log.refusal_at(start, "B", || "b".into());
        log.refusal_at(start + Duration::from_secs(9), "A", || "a late".into());
        log.refusal_at(start + Duration::from_secs(10), "A", || "a next".into());
        log.refusal_at(start + Duration::from_secs(11), "A", || "a held".into());
        log.flush();
        let lines: Vec<String> = out.lines().iter().map(|l| l.split(": ").nth(1).unwrap().to_string()).collect();
        assert_eq!(
            lines,
            [
                "a0".to_string(),
                "b".to_string(),
                "a next [and 5 more like this before, not printed]".to_string(),
                "1 more refusals (A) were not printed".to_string(),
            ]
        );
    }
}
