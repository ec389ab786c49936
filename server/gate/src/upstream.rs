//! A few shared HTTP/2 connections to the Python server's private Unix socket, used in
//! turn: one would serialize every call's frames on one socket and one connection's stream
//! limit; one per client would bring back into Python the connections the gate is there to
//! keep out. A connection that fails is made again by the next call that needs it.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use bytes::Bytes;
use h2::client::{ResponseFuture, SendRequest};
use h2::SendStream;
use http::Request;
use tokio::net::UnixStream;
use tokio::sync::Mutex;

use crate::STREAM_WINDOW;

/// How many connections the pool holds.
pub const UPSTREAM_CONNS: usize = 4;

/// A pooled connection and the number it was made as.
type Slot = Mutex<Option<(u64, SendRequest<Bytes>)>>;

pub struct Upstream {
    path: PathBuf,
    /// Each slot's connection, with the number it was made as (so that a call which found it
    /// closed clears that one, not a fresh one another call has just made).
    conns: Vec<Slot>,
    turn: AtomicUsize,
    made: AtomicU64,
}

impl Upstream {
    /// The pool for `target` ("unix:/path" or "unix:///path"); an error is one line.
    pub fn new(target: &str) -> Result<Upstream, String> {
        let path = target
            .strip_prefix("unix://")
            .or_else(|| target.strip_prefix("unix:"))
            .filter(|p| !p.is_empty())
            .ok_or_else(|| format!("bad --upstream {target:?}: want unix:/path/upstream.sock"))?;
        Ok(Upstream {
            path: PathBuf::from(path),
            conns: (0..UPSTREAM_CONNS).map(|_| Mutex::new(None)).collect(),
            turn: AtomicUsize::new(0),
            made: AtomicU64::new(0),
        })
    }

    async fn connect(&self) -> Result<SendRequest<Bytes>, String> {
        let socket =
            UnixStream::connect(&self.path).await.map_err(|e| format!("connect {}: {e}", self.path.display()))?;
        let (send, connection) = h2::client::Builder::new()
            .initial_window_size(STREAM_WINDOW)
            .initial_connection_window_size(crate::gate::CONN_WINDOW)
            .max_header_list_size(16 << 20)
            .enable_push(false)
            .handshake::<_, Bytes>(socket)
            .await
            .map_err(|e| format!("HTTP/2 to {}: {e}", self.path.display()))?;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        Ok(send)
    }

    /// Opens a call upstream with `request` (made anew for a retry on a fresh connection
    /// when a pooled one turns out to be closed).
    pub async fn open(&self, request: impl Fn() -> Request<()>) -> Result<(ResponseFuture, SendStream<Bytes>), String> {
        let slot = &self.conns[self.turn.fetch_add(1, Ordering::Relaxed) % self.conns.len()];
        let mut last_error = String::new();
        for _ in 0..2 {
            let (number, send) = {
                let mut guard = slot.lock().await;
                match guard.as_ref() {
                    Some((number, send)) => (*number, send.clone()),
                    None => {
                        let send = self.connect().await?;
                        let number = self.made.fetch_add(1, Ordering::Relaxed);
                        *guard = Some((number, send.clone()));
                        (number, send)
                    }
                }
            };
            let opened = match send.clone().ready().await {
                Ok(mut ready) => ready.send_request(request(), false).map_err(|e| e.to_string()),
                Err(e) => Err(e.to_string()),
            };
            match opened {
                Ok(call) => return Ok(call),
                Err(e) => {
                    last_error = e;
                    let mut guard = slot.lock().await;
                    if guard.as_ref().is_some_and(|(n, _)| *n == number) {
                        *guard = None; // closed: the next try connects anew
                    }
                }
            }
        }
        Err(last_error)
    }
}
