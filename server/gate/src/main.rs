//! ziggurat-gate is the native front of `ziggurat serve --gate`: it holds the public port,
//! terminates HTTP/2 (and TLS), enforces the connection-level limits and the first-message
//! deadline, and forwards only calls that have sent their first message to the Python server
//! over its private Unix socket. Junk traffic (idle connections, silent streams) so never
//! reaches the Python process, whose single event loop and memory it would otherwise cost
//! (issue 13's idle soak). Its contract with the server is server/gate/README.md.
//!
//! Written in Rust on tokio and h2 because its Go predecessor could not give memory back
//! after a burst: the Go runtime never frees a goroutine's descriptor (golang/go#9869). Here a
//! connection's or a call's task and buffers are freed when it ends, and `malloc_trim` gives
//! the heap back to the OS (memory.rs).

mod admission;
mod config;
mod gate;
mod log;
mod memory;
mod message;
mod movable;
mod refusal;
mod sniff;
mod upstream;

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpSocket};
use tokio::signal::unix::{signal, SignalKind};

use crate::config::{Config, Parsed};
use crate::gate::Gate;
use crate::log::Logger;

/// Stream windows, fixed on both sides: a stream's window is how much the gate takes in
/// before it is read. A client that sends faster than the Python server reads, or that never
/// reads what the server streams to it, would otherwise have the gate buffer far more per
/// stream, thousands of streams each. 64 KiB is (about) the smallest HTTP/2 allows and
/// plenty for game messages.
pub const STREAM_WINDOW: u32 = 64 << 10;

/// Exit codes: 0 after a clean stop, 1 when stopped at once by a second signal, 2 for
/// anything wrong at start-up (arguments, TLS files, the port).
const EXIT_CLEAN: i32 = 0;
const EXIT_FAILED: i32 = 1;
const EXIT_STARTUP: i32 = 2;

fn main() {
    let open_files = raise_open_files_limit();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let cfg = match config::parse(&args, |name| std::env::var(name).ok()) {
        Ok(Parsed::Run(cfg)) => *cfg,
        Ok(Parsed::Help) => {
            print!("{}", config::usage());
            std::process::exit(EXIT_CLEAN);
        }
        Err(e) => startup_error(&e),
    };
    let loop_ = || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap_or_else(|e| startup_error(&format!("cannot start: {e}")))
    };
    let (serving, admitting) = (loop_(), loop_());
    let admission = admitting.handle().clone();
    std::thread::Builder::new()
        .name("admission".into())
        .spawn(move || {
            lower_this_threads_priority(ADMISSION_NICENESS);
            admitting.block_on(std::future::pending::<()>());
        })
        .unwrap_or_else(|e| startup_error(&format!("cannot start: {e}")));
    let code = serving.block_on(run(cfg, admission, open_files));
    std::process::exit(code);
}

/// The admission loop's niceness, above the serving loop's (and the Python server's) 0.
///
/// Two event loops, each on a thread of its own, share the gate's work. The admission loop
/// accepts connections, sets up TLS and HTTP/2, holds calls until their first message and
/// refuses what admission refuses; the serving loop relays the calls that were forwarded and
/// serves the connections that carried one (movable.rs). A burst of connections or streams
/// that never make a call (issue 13's idle soak: 10,000 of each, opened and dropped at once)
/// is then work for the admission loop only: it no longer queues ahead of a healthy client's
/// call, and at this niceness it yields the CPU to the serving loop and to the server behind
/// the gate when they have work, while still getting about a tenth of a busy core.
const ADMISSION_NICENESS: i32 = 10;

/// Lowers the calling thread's CPU priority (Linux keeps a niceness per thread); a failure
/// leaves it as it is.
fn lower_this_threads_priority(niceness: i32) {
    // SAFETY: gettid and setpriority touch no memory of ours.
    unsafe {
        let tid = libc::gettid();
        libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, niceness);
    }
}

/// Raises the soft limit of open files to the hard one: each connection is a file, and the
/// soft limit a shell gives (often 1,024) would cap the gate far below the connections it is
/// there to hold. Go's runtime does the same at start-up; a failure leaves the limit as it is.
/// Returns the soft limit it leaves (None if it cannot be read).
fn raise_open_files_limit() -> Option<u64> {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit and setrlimit read and write only the struct we pass.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return None;
        }
        if limit.rlim_cur < limit.rlim_max {
            let raised = libc::rlimit { rlim_cur: limit.rlim_max, rlim_max: limit.rlim_max };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                return Some(raised.rlim_cur);
            }
        }
    }
    Some(limit.rlim_cur)
}

/// A warning when the open-files limit leaves other clients little room beside one address
/// at `--max-open-connections-per-address`: the cap protects everyone else's connections
/// only if the process can open at least as many again (with a hard limit of 1,024 and the
/// default cap of 1,000, one address would leave 24 descriptors for every other client).
fn open_files_warning(limit: u64, cap: u32) -> Option<String> {
    let cap = u64::from(cap);
    if cap == 0 || limit >= 2 * cap {
        return None;
    }
    Some(format!(
        "the open-files limit is {limit}: one address at --max-open-connections-per-address ({cap}) would \
         leave {} for every other client; raise the hard limit (ulimit -Hn, systemd's LimitNOFILE) to at \
         least {} or lower the cap",
        limit.saturating_sub(cap),
        2 * cap
    ))
}

/// One line on standard error, exit 2.
fn startup_error(message: &str) -> ! {
    eprintln!("ziggurat-gate: error: {}", message.replace('\n', " "));
    std::process::exit(EXIT_STARTUP);
}

/// Binds a listening address (Go's `:PORT` is every address), or exits with one line. With
/// `reuse_port` the socket takes SO_REUSEPORT first: other processes of this user may bind the
/// same port, and the kernel spreads new connections over them (`ziggurat serve --workers`).
async fn bind(spelt: &str, reuse_port: bool) -> TcpListener {
    let listen = match spelt.strip_prefix(':') {
        Some(port) => format!("[::]:{port}"),
        None => spelt.to_string(),
    };
    fn refused(spelt: &str, e: &dyn std::fmt::Display) -> ! {
        startup_error(&format!("cannot listen on {spelt}: {e}"))
    }
    if !reuse_port {
        return TcpListener::bind(&listen).await.unwrap_or_else(|e| refused(spelt, &e));
    }
    let address = match tokio::net::lookup_host(&listen).await.map(|mut all| all.next()) {
        Ok(Some(address)) => address,
        Ok(None) => refused(spelt, &"no address"),
        Err(e) => refused(spelt, &e),
    };
    let socket = if address.is_ipv4() { TcpSocket::new_v4() } else { TcpSocket::new_v6() };
    let listener = socket.and_then(|socket| {
        socket.set_reuseaddr(true)?;
        socket.set_reuseport(true)?;
        socket.bind(address)?;
        socket.listen(1024)
    });
    listener.unwrap_or_else(|e| refused(spelt, &e))
}

/// Go's form of a duration in the log ("10s", "700ms").
fn duration_text(d: Duration) -> String {
    if d < Duration::from_secs(1) && !d.is_zero() {
        format!("{}ms", refusal::python_g(d.as_secs_f64() * 1000.0))
    } else {
        format!("{}s", refusal::python_g(d.as_secs_f64()))
    }
}

async fn run(cfg: Config, admission: tokio::runtime::Handle, open_files: Option<u64>) -> i32 {
    let tls = if cfg.tls_cert.is_empty() {
        None
    } else {
        Some(tls_acceptor(&cfg.tls_cert, &cfg.tls_key).unwrap_or_else(|e| startup_error(&e)))
    };
    let log = Arc::new(Logger::new(Box::new(std::io::stderr()), cfg.log_level));
    let mut signals = Signals::new().unwrap_or_else(|e| startup_error(&format!("cannot watch signals: {e}")));
    let gate = Arc::new(Gate::new(cfg.clone(), log.clone(), tls).unwrap_or_else(|e| startup_error(&e)));
    let listener = bind(&cfg.listen, cfg.reuse_port).await;
    let address = listener.local_addr().map(|a| a.to_string()).unwrap_or_else(|_| cfg.listen.clone());
    let also = if cfg.also_listen.is_empty() { None } else { Some(bind(&cfg.also_listen, false).await) };
    let also_address = also.as_ref().map(|l| l.local_addr().map(|a| a.to_string()).unwrap_or_default());
    // The ready line: `ziggurat serve` waits for it and reports this address as its own.
    {
        let mut out = std::io::stdout().lock();
        let _ = match &also_address {
            Some(second) => writeln!(out, "ziggurat-gate listening on {address}, also on {second}"),
            None => writeln!(out, "ziggurat-gate listening on {address}"),
        };
        let _ = out.flush();
    }
    let shared = if cfg.reuse_port { " (shared)" } else { "" };
    let second = also_address.map(|a| format!(" and {a}")).unwrap_or_default();
    log.info(&format!("listening on {address}{shared}{second}, forwarding to {}", cfg.upstream));
    if let Some(warning) = open_files.and_then(|limit| open_files_warning(limit, cfg.max_open_connections_per_address))
    {
        log.warning(&warning);
    }

    tokio::spawn(memory::watch(gate.open.clone(), gate.connections.clone(), log.clone()));
    for listener in std::iter::once(listener).chain(also) {
        // Accepted on the admission loop (main's second runtime), as every connection starts.
        let listener = listener.into_std().unwrap_or_else(|e| startup_error(&format!("cannot listen: {e}")));
        let accepting = gate.clone();
        admission.spawn(async move {
            match TcpListener::from_std(listener) {
                Ok(listener) => accepting.serve(listener).await,
                Err(e) => startup_error(&format!("cannot listen: {e}")),
            }
        });
    }

    let first = signals.next().await;
    log.info(&format!(
        "{first}: refusing new calls, letting forwarded ones end (at most {})",
        duration_text(cfg.shutdown_timeout)
    ));
    tokio::select! {
        cut = gate.stop(cfg.shutdown_timeout) => {
            if cut > 0 {
                log.warning(&format!(
                    "cut {cut} forwarded calls still open after {} with {}",
                    duration_text(cfg.shutdown_timeout), refusal::SHUTTING_DOWN
                ));
            }
            log.flush();
            log.info("stopped");
            EXIT_CLEAN
        }
        again = signals.next() => {
            log.flush();
            log.warning(&format!("{again} again: stopping at once"));
            EXIT_FAILED
        }
    }
}

/// SIGTERM and SIGINT, as they come.
struct Signals {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
}

impl Signals {
    fn new() -> std::io::Result<Signals> {
        Ok(Signals { term: signal(SignalKind::terminate())?, int: signal(SignalKind::interrupt())? })
    }

    /// The next signal's name, as Go names it.
    async fn next(&mut self) -> &'static str {
        tokio::select! {
            _ = self.term.recv() => "terminated",
            _ = self.int.recv() => "interrupt",
        }
    }
}

/// TLS from PEM files: TLS 1.2 or later, HTTP/2 by ALPN. An error is one line (exit 2).
fn tls_acceptor(cert: &str, key: &str) -> Result<tokio_rustls::TlsAcceptor, String> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let bad = |e: &dyn std::fmt::Display| format!("cannot use --tls-cert/--tls-key: {e}");
    let certs = CertificateDer::pem_file_iter(cert)
        .map_err(|e| bad(&e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(&e))?;
    if certs.is_empty() {
        return Err(bad(&format!("no certificate in {cert}")));
    }
    let key = PrivateKeyDer::from_pem_file(key).map_err(|e| bad(&e))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| bad(&e))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| bad(&e))?;
    config.alpn_protocols = vec![b"h2".to_vec()];
    Ok(tokio_rustls::TlsAcceptor::from(Arc::new(config)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_limit_below_twice_the_open_connections_cap_is_warned_about() {
        let warning = open_files_warning(1024, 1000).expect("1,024 leaves 24 beside a cap of 1,000");
        assert!(warning.contains("the open-files limit is 1024"), "{warning}");
        assert!(warning.contains("leave 24 for every other client"), "{warning}");
        assert!(warning.contains("at least 2000"), "{warning}");
        assert_eq!(open_files_warning(2000, 1000), None);
        assert_eq!(open_files_warning(1_048_576, 1000), None);
        assert_eq!(open_files_warning(1024, 0), None, "no cap, nothing to protect");
        assert_eq!(open_files_warning(900, 1000).map(|w| w.contains("leave 0")), Some(true));
    }
}
