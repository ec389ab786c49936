//! What h2 does not show: the HTTP/2 frames that cross a connection, read off the bytes as
//! they pass (the frame headers only; payloads are skipped, never copied).
//!
//! Read side: every byte read is activity (keepalive: a quiet connection is pinged), and
//! every PING the client sends is checked against the ping policy (gRPC's enforcement policy:
//! a client may ping every 10 s even without calls; three pings too soon, without the gate
//! having sent headers or data in between, close the connection with ENHANCE_YOUR_CALM).
//! Write side: h2 answers a header block over SETTINGS_MAX_HEADER_LIST_SIZE with a 431
//! response and a RST_STREAM(PROTOCOL_ERROR), and keeps the connection; the gate's contract
//! closes it, so the pair is watched for here.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;

/// Clients may ping this often even without calls (as the Python server's
/// grpc.http2.min_ping_interval_without_data_ms allows); more often is a strike.
pub const PING_MIN_INTERVAL: Duration = Duration::from_secs(10);
/// Strikes allowed before the connection is closed (gRPC-Go's maxPingStrikes).
pub const MAX_PING_STRIKES: u32 = 2;

const PREFACE_LEN: usize = 24;
const FRAME_DATA: u8 = 0x0;
const FRAME_HEADERS: u8 = 0x1;
const FRAME_RST_STREAM: u8 = 0x3;
const FRAME_PING: u8 = 0x6;
const FLAG_ACK: u8 = 0x1;
const FLAG_END_STREAM: u8 = 0x1;
const PROTOCOL_ERROR: u32 = 0x1;

/// What a connection's task and its calls share.
pub struct ConnState {
    start: Instant,
    /// Milliseconds after `start` of the last byte read.
    last_read_ms: AtomicU64,
    /// Set when the gate writes headers or data: the next ping is not a strike.
    reset_strikes: AtomicBool,
    pub too_many_pings: AtomicBool,
    pub oversize_headers: AtomicBool,
    /// Wakes the connection's task (a policy was broken, or a call ended).
    pub wake: Notify,
    /// Calls open on the connection, and since when it has had none (ms after `start`).
    active: AtomicUsize,
    idle_since_ms: AtomicU64,
    /// A call on the connection has been forwarded: it has earned the serving loop.
    forwarded: AtomicBool,
}

impl ConnState {
    pub fn new() -> ConnState {
        ConnState {
            start: Instant::now(),
            last_read_ms: AtomicU64::new(0),
            reset_strikes: AtomicBool::new(false),
            too_many_pings: AtomicBool::new(false),
            oversize_headers: AtomicBool::new(false),
            wake: Notify::new(),
            active: AtomicUsize::new(0),
            idle_since_ms: AtomicU64::new(0),
            forwarded: AtomicBool::new(false),
        }
    }

    /// Milliseconds after the connection's start (the resolution activity is kept in).
    pub fn ms(&self, at: Instant) -> u64 {
        at.saturating_duration_since(self.start).as_millis() as u64
    }

    fn at(&self, ms: u64) -> Instant {
        self.start + Duration::from_millis(ms)
    }

    pub fn last_read_ms(&self) -> u64 {
        self.last_read_ms.load(Ordering::Relaxed)
    }

    pub fn last_read(&self) -> Instant {
        self.at(self.last_read_ms.load(Ordering::Relaxed))
    }

    pub fn active(&self) -> usize {
        self.active.load(Ordering::Acquire)
    }

    pub fn idle_since(&self) -> Instant {
        self.at(self.idle_since_ms.load(Ordering::Acquire))
    }

    /// A call's first message is in and the call goes upstream: the connection's task is
    /// woken to move to the serving loop.
    pub fn forwarded(&self) {
        if !self.forwarded.swap(true, Ordering::AcqRel) {
            self.wake.notify_one();
        }
    }

    pub fn forwarded_once(&self) -> bool {
        self.forwarded.load(Ordering::Acquire)
    }

    /// Counts a call in; the guard counts it out.
    pub fn call_started(self: &Arc<Self>) -> ActiveCall {
        self.active.fetch_add(1, Ordering::AcqRel);
        ActiveCall(self.clone())
    }
}

impl Default for ConnState {
    fn default() -> Self {
        Self::new()
    }
}

/// One call open on a connection.
pub struct ActiveCall(Arc<ConnState>);

impl Drop for ActiveCall {
    fn drop(&mut self) {
        let state = &self.0;
        state.idle_since_ms.store(state.ms(Instant::now()), Ordering::Release);
        if state.active.fetch_sub(1, Ordering::AcqRel) == 1 {
            state.wake.notify_one();
        }
    }
}

/// The header of one frame, and the first bytes of its payload (RST_STREAM's code).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Frame {
    pub kind: u8,
    pub flags: u8,
    pub stream: u32,
    pub code: u32,
}

/// Splits a byte stream into frames, however the bytes come.
#[derive(Default)]
pub struct FrameParser {
    preface_left: usize,
    head: [u8; 9],
    head_len: usize,
    payload_left: usize,
    payload_seen: usize,
    frame: Frame,
}

impl FrameParser {
    /// A parser for what a client sends (it starts with the connection preface).
    pub fn client_side() -> FrameParser {
        FrameParser { preface_left: PREFACE_LEN, ..Default::default() }
    }

    /// Feeds bytes; `on_frame` is called with each frame once its payload has passed (its
    /// first four bytes are its `code`).
    pub fn feed(&mut self, mut data: &[u8], mut on_frame: impl FnMut(Frame)) {
        while !data.is_empty() {
            if self.preface_left > 0 {
                let n = self.preface_left.min(data.len());
                self.preface_left -= n;
                data = &data[n..];
                continue;
            }
            if self.head_len < 9 {
                let n = (9 - self.head_len).min(data.len());
                self.head[self.head_len..self.head_len + n].copy_from_slice(&data[..n]);
                self.head_len += n;
                data = &data[n..];
                if self.head_len < 9 {
                    return;
                }
                let h = &self.head;
                self.payload_left = (usize::from(h[0]) << 16) | (usize::from(h[1]) << 8) | usize::from(h[2]);
                self.payload_seen = 0;
                self.frame = Frame {
                    kind: h[3],
                    flags: h[4],
                    stream: u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & 0x7fff_ffff,
                    code: 0,
                };
            }
            let n = self.payload_left.min(data.len());
            for &b in &data[..n] {
                if self.payload_seen < 4 {
                    self.frame.code = (self.frame.code << 8) | u32::from(b);
                }
                self.payload_seen += 1;
            }
            self.payload_left -= n;
            data = &data[n..];
            if self.payload_left == 0 {
                self.head_len = 0;
                on_frame(self.frame);
            }
        }
    }
}

/// The ping policy, fed the client's pings.
#[derive(Default)]
pub struct PingPolicy {
    last: Option<Instant>,
    strikes: u32,
}

impl PingPolicy {
    /// One ping from the client at `now`; true when it is one too many. `reset`: the gate
    /// has sent headers or data since the last ping.
    pub fn ping(&mut self, now: Instant, reset: bool) -> bool {
        let last = self.last.replace(now);
        if reset {
            self.strikes = 0;
            return false;
        }
        if last.is_some_and(|last| now.duration_since(last) < PING_MIN_INTERVAL) {
            self.strikes += 1;
        }
        self.strikes > MAX_PING_STRIKES
    }
}

/// A connection's byte stream with the frames watched.
pub struct Sniffed<T> {
    inner: T,
    state: Arc<ConnState>,
    reads: FrameParser,
    writes: FrameParser,
    pings: PingPolicy,
    /// The last stream the gate ended with a HEADERS frame.
    ended_by_headers: u32,
}

impl<T> Sniffed<T> {
    pub fn new(inner: T, state: Arc<ConnState>) -> Sniffed<T> {
        Sniffed {
            inner,
            state,
            reads: FrameParser::client_side(),
            writes: FrameParser::default(),
            pings: PingPolicy::default(),
            ended_by_headers: 0,
        }
    }

    fn read(&mut self, data: &[u8]) {
        let now = Instant::now();
        self.state.last_read_ms.store(self.state.ms(now), Ordering::Relaxed);
        let (state, pings) = (&self.state, &mut self.pings);
        self.reads.feed(data, |f| {
            if f.kind == FRAME_PING && f.flags & FLAG_ACK == 0 {
                let reset = state.reset_strikes.swap(false, Ordering::Relaxed);
                if pings.ping(now, reset) && !state.too_many_pings.swap(true, Ordering::Relaxed) {
                    state.wake.notify_one();
                }
            }
        });
    }

    fn wrote(&mut self, data: &[u8]) {
        let (state, ended) = (&self.state, &mut self.ended_by_headers);
        self.writes.feed(data, |f| match f.kind {
            FRAME_DATA => state.reset_strikes.store(true, Ordering::Relaxed),
            FRAME_HEADERS => {
                state.reset_strikes.store(true, Ordering::Relaxed);
                if f.flags & FLAG_END_STREAM != 0 {
                    *ended = f.stream;
                }
            }
            FRAME_RST_STREAM
                if f.code == PROTOCOL_ERROR
                    && f.stream == *ended
                    && !state.oversize_headers.swap(true, Ordering::Relaxed) =>
            {
                state.wake.notify_one();
            }
            _ => {}
        });
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Sniffed<T> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let result = Pin::new(&mut this.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = result {
            let filled = buf.filled();
            if filled.len() > before {
                this.read(&filled[before..]);
            }
        }
        result
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Sniffed<T> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let result = Pin::new(&mut this.inner).poll_write(cx, data);
        if let Poll::Ready(Ok(n)) = result {
            this.wrote(&data[..n]);
        }
        result
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let n = payload.len();
        let mut out = vec![(n >> 16) as u8, (n >> 8) as u8, n as u8, kind, flags];
        out.extend_from_slice(&stream.to_be_bytes());
        out.extend_from_slice(payload);
        out
    }

    #[test]
    fn frames_are_found_however_the_bytes_are_split() {
        let mut bytes = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
        bytes.extend(frame(FRAME_PING, 0, 0, &[1; 8]));
        bytes.extend(frame(FRAME_RST_STREAM, 0, 3, &[0, 0, 0, 1]));
        bytes.extend(frame(FRAME_DATA, 1, 5, &[]));
        for chunk in [1, 2, 5, 9, 100] {
            let mut parser = FrameParser::client_side();
            let mut seen = Vec::new();
            for piece in bytes.chunks(chunk) {
                parser.feed(piece, |f| seen.push(f));
            }
            assert_eq!(
                seen,
                [
                    Frame { kind: FRAME_PING, flags: 0, stream: 0, code: 0x01010101 },
                    Frame { kind: FRAME_RST_STREAM, flags: 0, stream: 3, code: 1 },
                    Frame { kind: FRAME_DATA, flags: 1, stream: 5, code: 0 },
                ],
                "chunks of {chunk}"
            );
        }
    }

    #[test]
    fn the_third_ping_too_soon_breaks_the_policy_unless_the_gate_sent_something() {
        let start = Instant::now();
        let ms = |n| start + Duration::from_millis(n);
        let mut policy = PingPolicy::default();
        assert!(!policy.ping(ms(0), false));
        assert!(!policy.ping(ms(50), false));
        assert!(!policy.ping(ms(100), false));
        assert!(policy.ping(ms(150), false));

        let mut policy = PingPolicy::default();
        for i in 0..10 {
            assert!(!policy.ping(ms(i * 50), i % 2 == 1), "ping {i}");
        }
        let mut policy = PingPolicy::default();
        for i in 0..10 {
            assert!(!policy.ping(ms(i * 10_000), false), "ping {i}");
        }
    }

    #[test]
    fn a_431_and_its_reset_mark_an_oversize_header_block() {
        let state = Arc::new(ConnState::new());
        let mut sniffed = Sniffed::new((), state.clone());
        sniffed.wrote(&frame(FRAME_HEADERS, 0x5, 1, &[0x88, 0xc0, 0xc1]));
        sniffed.wrote(&frame(FRAME_RST_STREAM, 0, 3, &[0, 0, 0, 1]));
        assert!(!state.oversize_headers.load(Ordering::Relaxed));
        sniffed.wrote(&frame(FRAME_HEADERS, 0x5, 3, &[0x08, 0x03, 0x34, 0x33, 0x31]));
        sniffed.wrote(&frame(FRAME_RST_STREAM, 0, 3, &[0, 0, 0, 1]));
        assert!(state.oversize_headers.load(Ordering::Relaxed));
    }
}
