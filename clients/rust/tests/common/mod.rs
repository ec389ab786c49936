//! A real `ziggurat serve` subprocess on a loopback port with its own database file.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// The `ziggurat` command: `$ZIGGURAT`, else the repository's `.venv/bin/ziggurat`.
pub fn ziggurat() -> PathBuf {
    std::env::var_os("ZIGGURAT")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.venv/bin/ziggurat"))
}

pub struct Server {
    pub dir: tempfile::TempDir,
    pub address: String,
    port: u16,
    extra: Vec<String>,
    child: Option<Child>,
}

impl Server {
    /// Starts a server on a free port with a fresh database.
    pub fn start() -> Server {
        Server::start_with(&[])
    }

    /// Starts a server with extra `serve` arguments (e.g. `--tls-cert`).
    pub fn start_with(extra: &[&str]) -> Server {
        let dir = tempfile::tempdir().expect("temporary directory");
        let mut server = Server {
            dir,
            address: String::new(),
            port: 0,
            extra: extra.iter().map(|s| s.to_string()).collect(),
            child: None,
        };
        server.launch();
        server
    }

    pub fn db(&self) -> PathBuf {
        self.dir.path().join("z.db")
    }

    fn launch(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join("server.log"))
            .expect("server log");
        let mut child = Command::new(ziggurat())
            .args([
                "serve",
                "--host",
                "127.0.0.1",
                "--port",
                &self.port.to_string(),
                "--no-mdns",
            ])
            .arg("--db")
            .arg(self.db())
            .args(&self.extra)
            .env("PYTHONUNBUFFERED", "1")
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", ziggurat().display()));
        let stdout = child.stdout.take().expect("stdout");
        let (sender, receiver) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(address) = line.strip_prefix("ziggurat listening on ") {
                    let _ = sender.send(address.trim().to_string());
                }
            }
        });
        let address = receiver
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| {
                let log = std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default();
                panic!("the server did not start:\n{log}")
            });
        self.port = address
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .expect("port");
        self.address = address;
        self.child = Some(child);
    }

    /// SIGKILL: no shutdown, no flush beyond what SQLite committed.
    pub fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill().expect("kill");
            child.wait().expect("wait");
        }
    }

    /// Starts the server again on the same port and database.
    pub fn restart(&mut self) {
        self.launch();
    }

    /// Runs `ziggurat verify MATCH_ID --server ADDRESS` and returns its output; panics if it fails.
    pub fn verify(&self, match_id: &str) -> String {
        let output = Command::new(ziggurat())
            .args(["verify", match_id, "--server", &self.address])
            .output()
            .expect("ziggurat verify");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(
            output.status.success(),
            "ziggurat verify {match_id} failed:\n{text}"
        );
        text
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill9();
    }
}
