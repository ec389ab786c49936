//! The gate's command line and environment (server/gate/README.md, "Command line").
//!
//! `ziggurat serve --gate` passes its own limit options through with the same names, units
//! and defaults, so one operator setting means the same thing whether or not the gate is in
//! front. The syntax is that of the Go gate this replaces (Go's `flag` package): `--name
//! value`, `--name=value`, one or two dashes, parsing stops at the first non-option.

use std::time::Duration;

/// Stands for any longer time (Python accepts "inf" too): about 30 years.
pub const LONGEST: Duration = Duration::from_secs(1_000_000_000);

/// The secret is all that tells the Python server a call came through the gate (and so
/// that its x-ziggurat-peer can be believed); a short one could be guessed.
pub const MIN_SECRET_LENGTH: usize = 32;

/// A log line's severity; the names are those of `ziggurat serve --log-level`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Debug,
    Info,
    Warning,
    Error,
}

impl Level {
    pub fn name(self) -> &'static str {
        match self {
            Level::Debug => "DEBUG",
            Level::Info => "INFO",
            Level::Warning => "WARNING",
            Level::Error => "ERROR",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    pub listen: String,
    /// `--listen` is bound with SO_REUSEPORT: the workers of `ziggurat serve --workers` each
    /// run a gate on the one public port, and the kernel spreads connections over them.
    pub reuse_port: bool,
    /// A second address forwarding to the same upstream (a worker's own port, where clients
    /// are sent for its matches); empty when there is none.
    pub also_listen: String,
    pub upstream: String,
    pub secret: String,

    pub max_message_bytes: u32,
    pub max_streams_per_connection: u32,
    pub max_streams_per_address: u32,
    pub max_connections_per_address: u32,
    pub max_open_connections_per_address: u32,
    /// IPv6 clients are counted by this prefix of their address (1-128).
    pub ipv6_prefix_length: u8,

    pub first_message_timeout: Duration,
    pub max_connection_idle: Duration,
    pub max_connection_age: Duration,
    pub max_connection_age_grace: Duration,
    pub keepalive: Duration,
    pub keepalive_timeout: Duration,
    pub handshake_timeout: Duration,
    pub shutdown_timeout: Duration,

    pub tls_cert: String,
    pub tls_key: String,

    pub log_level: Level,
}

impl Default for Config {
    /// The defaults of `ziggurat serve`.
    fn default() -> Self {
        Config {
            listen: String::new(),
            reuse_port: false,
            also_listen: String::new(),
            upstream: String::new(),
            secret: String::new(),
            max_message_bytes: 65536,
            max_streams_per_connection: 10000,
            max_streams_per_address: 5000,
            max_connections_per_address: 500,
            max_open_connections_per_address: 1000,
            ipv6_prefix_length: 64,
            first_message_timeout: Duration::from_secs(10),
            max_connection_idle: Duration::from_secs(60),
            max_connection_age: Duration::from_secs(3600),
            max_connection_age_grace: Duration::from_secs(300),
            keepalive: Duration::from_secs(30),
            keepalive_timeout: Duration::from_secs(10),
            handshake_timeout: Duration::from_secs(20),
            shutdown_timeout: Duration::from_secs(10),
            tls_cert: String::new(),
            tls_key: String::new(),
            log_level: Level::Info,
        }
    }
}

/// What parsing asks of main: run with a configuration, or print the usage (exit 0).
#[derive(Debug, PartialEq)]
pub enum Parsed {
    Run(Box<Config>),
    Help,
}

/// The kind of value an option takes.
#[derive(Clone, Copy)]
enum Kind {
    Text,
    /// Given alone (`--name`, true) or as `--name=true|false`, as Go's bool flags are.
    Bool,
    Count,
    Prefix,
    Seconds,
    LogLevel,
}

/// Every option: name, kind, help text, in the order `--help` lists them.
const OPTIONS: &[(&str, Kind, &str)] = &[
    ("also-listen", Kind::Text, "a second HOST:PORT forwarding to the same upstream (a worker's own port)"),
    ("first-message-timeout", Kind::Seconds, "seconds a call may take to send its first message (0 = no limit)"),
    ("handshake-timeout", Kind::Seconds, "a new connection must finish its HTTP/2 (and TLS) set-up within this"),
    (
        "ipv6-prefix-length",
        Kind::Prefix,
        "IPv6 clients are counted per address by this prefix (1-128; 128: each address alone)",
    ),
    ("keepalive", Kind::Seconds, "seconds between pings on a quiet connection"),
    ("keepalive-timeout", Kind::Seconds, "a ping unanswered this long closes the connection"),
    ("listen", Kind::Text, "public HOST:PORT to listen on (PORT 0 picks a free one)"),
    ("log-level", Kind::LogLevel, "debug, info, warning or error"),
    ("max-connection-age", Kind::Seconds, "ask every connection to go away after this (0 = never)"),
    ("max-connection-age-grace", Kind::Seconds, "then cut its calls still open after this"),
    ("max-connection-idle", Kind::Seconds, "close a connection without calls after this (0 = never)"),
    ("max-connections-per-address", Kind::Count, "connections with calls from one IP (0 = no cap)"),
    ("max-message-bytes", Kind::Count, "largest request message accepted"),
    (
        "max-open-connections-per-address",
        Kind::Count,
        "connections open from one IP, with calls or not, counted from accept (0 = no cap)",
    ),
    ("max-streams-per-address", Kind::Count, "calls open at once from one IP (0 = no cap)"),
    ("max-streams-per-connection", Kind::Count, "calls open at once on one connection"),
    ("reuse-port", Kind::Bool, "bind --listen with SO_REUSEPORT, shared with other gates of this user"),
    ("shutdown-timeout", Kind::Seconds, "on SIGTERM, wait this long for forwarded calls to end"),
    ("tls-cert", Kind::Text, "PEM certificate chain (with --tls-key)"),
    ("tls-key", Kind::Text, "PEM private key (with --tls-cert)"),
    ("upstream", Kind::Text, "the Python server's private socket, unix:/path/upstream.sock"),
];

/// A whole number, 0 or more; past 2^31 (Python takes any size) it means "no practical
/// limit" and is held as 2^31 - 1.
pub fn parse_count(text: &str) -> Result<u32, String> {
    let bad = || "must be a whole number, 0 or more".to_string();
    match text.parse::<i64>() {
        Ok(value) if value < 0 => Err(bad()),
        Ok(value) => Ok(value.min(i32::MAX as i64) as u32),
        Err(e) if *e.kind() == std::num::IntErrorKind::PosOverflow && !text.starts_with('-') => Ok(i32::MAX as u32),
        Err(_) => Err(bad()),
    }
}

/// Seconds, fractions allowed, 0 or more; `inf` and anything past [`LONGEST`] is [`LONGEST`].
pub fn parse_seconds(text: &str) -> Result<Duration, String> {
    let value: f64 = text.parse().map_err(|_| "must be 0 or more seconds".to_string())?;
    if value.is_nan() || value < 0.0 {
        return Err("must be 0 or more seconds".to_string());
    }
    if value >= LONGEST.as_secs_f64() {
        return Ok(LONGEST);
    }
    // Whole nanoseconds, truncated, as Go's time.Duration(value * 1e9) does.
    Ok(Duration::from_nanos((value * 1e9) as u64))
}

/// An IPv6 prefix length, 1 to 128.
pub fn parse_prefix(text: &str) -> Result<u8, String> {
    match text.parse::<u8>() {
        Ok(bits) if (1..=128).contains(&bits) => Ok(bits),
        _ => Err("must be a prefix length from 1 to 128".to_string()),
    }
}

pub fn parse_level(text: &str) -> Result<Level, String> {
    match text {
        "debug" => Ok(Level::Debug),
        "info" => Ok(Level::Info),
        "warning" => Ok(Level::Warning),
        "error" => Ok(Level::Error),
        _ => Err("must be one of debug, info, warning, error".to_string()),
    }
}

fn set(c: &mut Config, name: &str, kind: Kind, value: &str) -> Result<(), String> {
    let invalid = |why: String| format!("invalid value {value:?} for flag -{name}: {why}");
    match kind {
        Kind::Text => {
            let field = match name {
                "listen" => &mut c.listen,
                "also-listen" => &mut c.also_listen,
                "upstream" => &mut c.upstream,
                "tls-cert" => &mut c.tls_cert,
                _ => &mut c.tls_key,
            };
            *field = value.to_string();
        }
        Kind::Count => {
            let n = parse_count(value).map_err(invalid)?;
            *match name {
                "max-message-bytes" => &mut c.max_message_bytes,
                "max-streams-per-connection" => &mut c.max_streams_per_connection,
                "max-streams-per-address" => &mut c.max_streams_per_address,
                "max-open-connections-per-address" => &mut c.max_open_connections_per_address,
                _ => &mut c.max_connections_per_address,
            } = n;
        }
        Kind::Bool => {
            c.reuse_port = match value {
                "true" | "1" => true,
                "false" | "0" => false,
                _ => return Err(invalid("must be true or false".to_string())),
            }
        }
        Kind::Prefix => c.ipv6_prefix_length = parse_prefix(value).map_err(invalid)?,
        Kind::Seconds => {
            let d = parse_seconds(value).map_err(invalid)?;
            *match name {
                "first-message-timeout" => &mut c.first_message_timeout,
                "max-connection-idle" => &mut c.max_connection_idle,
                "max-connection-age" => &mut c.max_connection_age,
                "max-connection-age-grace" => &mut c.max_connection_age_grace,
                "keepalive" => &mut c.keepalive,
                "keepalive-timeout" => &mut c.keepalive_timeout,
                "handshake-timeout" => &mut c.handshake_timeout,
                _ => &mut c.shutdown_timeout,
            } = d;
        }
        Kind::LogLevel => c.log_level = parse_level(value).map_err(invalid)?,
    }
    Ok(())
}

/// Reads the arguments and the secret from the environment; an error is one line for the
/// operator (main prints it and exits 2).
pub fn parse(args: &[String], getenv: impl Fn(&str) -> Option<String>) -> Result<Parsed, String> {
    let mut c = Config::default();
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        if arg == "--" {
            i += 1;
            break;
        }
        let Some(body) = arg.strip_prefix("--").or_else(|| arg.strip_prefix('-')) else {
            break; // the first non-option ends the options, as in Go
        };
        if body.is_empty() || body.starts_with('-') || body.starts_with('=') {
            return Err(format!("bad flag syntax: {arg}"));
        }
        let (name, inline) = match body.split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (body, None),
        };
        if name == "h" || name == "help" {
            return Ok(Parsed::Help);
        }
        let Some(&(_, kind, _)) = OPTIONS.iter().find(|(n, _, _)| *n == name) else {
            return Err(format!("flag provided but not defined: -{name}"));
        };
        let value = match inline {
            Some(v) => v,
            None if matches!(kind, Kind::Bool) => "true".to_string(),
            None => {
                i += 1;
                match args.get(i) {
                    Some(v) => v.clone(),
                    None => return Err(format!("flag needs an argument: -{name}")),
                }
            }
        };
        set(&mut c, name, kind, &value)?;
        i += 1;
    }
    if let Some(extra) = args.get(i) {
        return Err(format!("unexpected argument {extra:?}"));
    }
    if c.listen.is_empty() {
        return Err("--listen HOST:PORT is required".to_string());
    }
    if c.upstream.is_empty() {
        return Err("--upstream unix:/path is required".to_string());
    }
    if c.tls_cert.is_empty() != c.tls_key.is_empty() {
        return Err("--tls-cert and --tls-key go together".to_string());
    }
    c.secret = getenv("ZIGGURAT_GATE_SECRET").unwrap_or_default();
    if c.secret.len() < MIN_SECRET_LENGTH {
        return Err(format!("ZIGGURAT_GATE_SECRET must be set to {MIN_SECRET_LENGTH} or more characters"));
    }
    Ok(Parsed::Run(Box::new(c)))
}

/// Seconds as `--help` shows defaults: Go's shortest float form ("10", "0.5").
fn seconds_text(d: Duration) -> String {
    format!("{}", d.as_secs_f64())
}

/// The text printed for -h/--help (to standard output).
pub fn usage() -> String {
    let d = Config::default();
    let mut out = String::from(
        "usage: ziggurat-gate --listen HOST:PORT --upstream unix:/path/upstream.sock [options]\n\
         environment: ZIGGURAT_GATE_SECRET (required, 32+ characters)\n",
    );
    for (name, kind, help) in OPTIONS {
        let default = match (*name, kind) {
            ("max-message-bytes", _) => d.max_message_bytes.to_string(),
            ("max-streams-per-connection", _) => d.max_streams_per_connection.to_string(),
            ("max-streams-per-address", _) => d.max_streams_per_address.to_string(),
            ("max-connections-per-address", _) => d.max_connections_per_address.to_string(),
            ("max-open-connections-per-address", _) => d.max_open_connections_per_address.to_string(),
            ("ipv6-prefix-length", _) => d.ipv6_prefix_length.to_string(),
            ("first-message-timeout", _) => seconds_text(d.first_message_timeout),
            ("max-connection-idle", _) => seconds_text(d.max_connection_idle),
            ("max-connection-age", _) => seconds_text(d.max_connection_age),
            ("max-connection-age-grace", _) => seconds_text(d.max_connection_age_grace),
            ("keepalive", _) => seconds_text(d.keepalive),
            ("keepalive-timeout", _) => seconds_text(d.keepalive_timeout),
            ("handshake-timeout", _) => seconds_text(d.handshake_timeout),
            ("shutdown-timeout", _) => seconds_text(d.shutdown_timeout),
            ("log-level", _) => "info".to_string(),
            ("reuse-port", _) => "false".to_string(),
            _ => String::new(),
        };
        out.push_str(&format!("  --{name} (default {default:?})\n      {help}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "0123456789abcdef0123456789abcdef";

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    fn run(list: &[&str]) -> Result<Config, String> {
        match parse(&args(list), |_| Some(SECRET.to_string()))? {
            Parsed::Run(c) => Ok(*c),
            Parsed::Help => Err("help".into()),
        }
    }

    #[test]
    fn options_take_what_ziggurat_serve_takes() {
        let c = run(&[
            "--listen",
            "127.0.0.1:0",
            "--upstream",
            "unix:/x.sock",
            "--first-message-timeout",
            "0.25",
            "--max-connection-age",
            "inf",
            "--keepalive",
            "1e-05",
            "--max-streams-per-address",
            "99999999999",
            "--max-connections-per-address=0",
            "-max-message-bytes",
            "100",
            "--max-open-connections-per-address",
            "0",
            "--ipv6-prefix-length",
            "128",
            "--reuse-port",
            "--also-listen",
            "127.0.0.1:7",
        ])
        .unwrap();
        assert!(c.reuse_port);
        assert_eq!(c.also_listen, "127.0.0.1:7");
        assert_eq!(c.first_message_timeout, Duration::from_millis(250));
        assert_eq!(c.max_connection_age, LONGEST);
        assert_eq!(c.keepalive, Duration::from_micros(10));
        assert_eq!(c.max_streams_per_address, i32::MAX as u32);
        assert_eq!(c.max_connections_per_address, 0);
        assert_eq!(c.max_message_bytes, 100);
        assert_eq!((c.max_open_connections_per_address, c.ipv6_prefix_length), (0, 128));
        assert_eq!(c.secret, SECRET);
    }

    #[test]
    fn defaults_are_those_of_ziggurat_serve() {
        let d = Config::default();
        assert_eq!(
            (
                d.max_message_bytes,
                d.max_streams_per_connection,
                d.max_streams_per_address,
                d.max_connections_per_address
            ),
            (65536, 10000, 5000, 500)
        );
        assert_eq!((d.max_open_connections_per_address, d.ipv6_prefix_length), (1000, 64));
        let secs = |s| Duration::from_secs(s);
        assert_eq!(
            [
                d.first_message_timeout,
                d.max_connection_idle,
                d.max_connection_age,
                d.max_connection_age_grace,
                d.keepalive,
                d.keepalive_timeout,
                d.handshake_timeout,
                d.shutdown_timeout
            ],
            [secs(10), secs(60), secs(3600), secs(300), secs(30), secs(10), secs(20), secs(10)]
        );
        assert_eq!(d.log_level, Level::Info);
    }

    #[test]
    fn bad_values_are_refused_with_one_line() {
        let base = ["--listen", ":0", "--upstream", "unix:/x"];
        for (bad, says) in [
            (&["--keepalive", "nan"][..], "0 or more seconds"),
            (&["--keepalive", "-0.5"], "0 or more seconds"),
            (&["--max-message-bytes", "-1"], "whole number"),
            (&["--max-message-bytes", "1.5"], "whole number"),
            (&["--max-message-bytes", "-99999999999999999999999"], "whole number"),
            (&["--log-level", "loud"], "debug, info, warning, error"),
            (&["--ipv6-prefix-length", "0"], "from 1 to 128"),
            (&["--ipv6-prefix-length", "129"], "from 1 to 128"),
            (&["--ipv6-prefix-length", "/64"], "from 1 to 128"),
            (&["--max-open-connections-per-address", "-1"], "whole number"),
            (&["--colour", "red"], "flag provided but not defined"),
            (&["--reuse-port=yes"], "true or false"),
            (&["extra"], "unexpected argument"),
            (&["--tls-cert", "x"], "go together"),
            (&["--listen"], "flag needs an argument"),
        ] {
            let mut list = base.to_vec();
            list.extend_from_slice(bad);
            let err = run(&list).unwrap_err();
            assert!(err.contains(says), "{bad:?}: {err}");
            assert!(!err.contains('\n'));
        }
        assert!(run(&["--upstream", "unix:/x"]).unwrap_err().contains("--listen"));
        assert!(run(&["--listen", ":0"]).unwrap_err().contains("--upstream"));
        let short = parse(&args(&base), |_| Some("short".into())).unwrap_err();
        assert!(short.contains("ZIGGURAT_GATE_SECRET"));
        let none = parse(&args(&base), |_| None).unwrap_err();
        assert!(none.contains("ZIGGURAT_GATE_SECRET"));
    }

    #[test]
    fn help_is_asked_for_with_either_spelling() {
        assert_eq!(parse(&args(&["--help"]), |_| None), Ok(Parsed::Help));
        assert_eq!(parse(&args(&["-h"]), |_| None), Ok(Parsed::Help));
        let text = usage();
        assert!(text.contains("--first-message-timeout (default \"10\")"));
        assert!(text.contains("--max-message-bytes (default \"65536\")"));
        assert!(text.contains("--max-open-connections-per-address (default \"1000\")"));
        assert!(text.contains("--ipv6-prefix-length (default \"64\")"));
    }
}
