//! A client's TCP stream that can move from one runtime to another while HTTP/2 (and TLS)
//! keep using it.
//!
//! The gate runs two event loops (main.rs): the admission loop, at a lower CPU priority,
//! accepts connections and holds them until a call on them sends its first message; the
//! serving loop relays forwarded calls. A connection moves to the serving loop once it has
//! forwarded a call, so that its frames no longer wait behind a burst of connections that
//! never make one (issue 13's idle soak: 10,000 connections opened or dropped at once put
//! thousands of tasks ahead of a healthy client's call on one loop). tokio ties a socket to
//! the loop whose reactor registered it, and h2 owns the stream it was given, so the socket
//! sits in a shared slot: [`Mover::rebind`] takes it out of the old reactor and registers
//! it with the new one between two polls of the connection's task.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::runtime::Handle;

type Slot = Arc<Mutex<Option<TcpStream>>>;

/// The stream HTTP/2 reads and writes: the socket in the slot. Only the connection's own
/// task polls it, so the lock is never contended.
pub struct Movable(Slot);

/// What the connection's task keeps to move the socket.
pub struct Mover(Slot);

/// A stream and the handle that moves it.
pub fn movable(tcp: TcpStream) -> (Movable, Mover) {
    let slot = Arc::new(Mutex::new(Some(tcp)));
    (Movable(slot.clone()), Mover(slot))
}

fn lock(slot: &Slot) -> MutexGuard<'_, Option<TcpStream>> {
    slot.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn moved_away() -> io::Error {
    io::Error::new(io::ErrorKind::NotConnected, "the connection's socket failed to move")
}

impl Mover {
    /// Registers the socket with `to`'s reactor in place of the one it was accepted on.
    /// Called by the connection's task between polls of HTTP/2, so nothing is reading or
    /// writing: bytes that arrived meanwhile wait in the kernel, and the new registration
    /// reports them. On an error the socket is closed and HTTP/2 sees the connection end.
    pub fn rebind(&self, to: &Handle) -> io::Result<()> {
        let mut slot = lock(&self.0);
        let tcp = slot.take().ok_or_else(moved_away)?;
        let std = tcp.into_std()?;
        let _inside = to.enter();
        *slot = Some(TcpStream::from_std(std)?);
        Ok(())
    }
}

impl AsyncRead for Movable {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        match lock(&self.0).as_mut() {
            Some(tcp) => Pin::new(tcp).poll_read(cx, buf),
            None => Poll::Ready(Err(moved_away())),
        }
    }
}

impl AsyncWrite for Movable {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        match lock(&self.0).as_mut() {
            Some(tcp) => Pin::new(tcp).poll_write(cx, data),
            None => Poll::Ready(Err(moved_away())),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match lock(&self.0).as_mut() {
            Some(tcp) => Pin::new(tcp).poll_write_vectored(cx, bufs),
            None => Poll::Ready(Err(moved_away())),
        }
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match lock(&self.0).as_mut() {
            Some(tcp) => Pin::new(tcp).poll_flush(cx),
            None => Poll::Ready(Ok(())),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match lock(&self.0).as_mut() {
            Some(tcp) => Pin::new(tcp).poll_shutdown(cx),
            None => Poll::Ready(Ok(())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A socket accepted on one runtime keeps its bytes, in both directions, after it moves
    /// to another runtime whose thread then serves it alone (the first runtime is gone).
    #[test]
    fn a_socket_moves_to_another_runtime_and_keeps_working() {
        let first = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let second = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let (mut stream, mover, mut peer) = first.block_on(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let peer = TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
            let (tcp, _) = listener.accept().await.unwrap();
            let (mut stream, mover) = movable(tcp);
            let mut peer = peer;
            peer.write_all(b"before").await.unwrap();
            let mut got = [0u8; 6];
            stream.read_exact(&mut got).await.unwrap();
            assert_eq!(&got, b"before");
            peer.write_all(b"between").await.unwrap(); // arrives while nothing reads
            (stream, mover, peer.into_std().unwrap())
        });
        mover.rebind(second.handle()).unwrap();
        drop(first);
        second.block_on(async {
            let mut got = [0u8; 7];
            stream.read_exact(&mut got).await.unwrap();
            assert_eq!(&got, b"between");
            stream.write_all(b"after").await.unwrap();
        });
        use std::io::Read;
        let mut got = [0u8; 5];
        peer.set_nonblocking(false).unwrap();
        peer.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"after");
    }
}
