//! The running front: the public port's connections, each call's admission, first-message
//! hold and forwarding, and the state that admission and shutdown share.

use std::future::poll_fn;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use h2::server::SendResponse;
use h2::{Ping, Reason, RecvStream, SendStream};
use http::{HeaderMap, HeaderValue, Request, Response};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use tokio::time::{sleep, sleep_until};

use crate::admission::{address_group, peer_name, Admission, Connected, TooManyOpen};
use crate::config::{Config, LONGEST};
use crate::log::Logger;
use crate::message::{Framer, ReadError, Reader};
use crate::movable::movable;
use crate::refusal::{self, code, Refusal};
use crate::sniff::{ActiveCall, ConnState, Sniffed};
use crate::upstream::Upstream;
use crate::STREAM_WINDOW;

/// Metadata the gate adds to every forwarded call. The Python server believes
/// x-ziggurat-peer only when x-ziggurat-gate carries its secret; the gate drops every key
/// that starts with either from what clients send, so a client cannot forge them.
pub const PEER_KEY: &str = "x-ziggurat-peer";
pub const SECRET_KEY: &str = "x-ziggurat-gate";

/// A call's metadata as gRPC core counts it (name + value + 32 per field): over
/// [`MAX_METADATA_BYTES`] (the Python server's hard limit) a call is refused at once, before
/// anything is held; [`MAX_HEADER_LIST_BYTES`] is the transport's cap (HTTP/2
/// SETTINGS_MAX_HEADER_LIST_SIZE), room above the refusal: a header block over it is never
/// kept (the connection is closed).
pub const MAX_METADATA_BYTES: usize = 16 << 10;
pub const MAX_HEADER_LIST_BYTES: u32 = 64 << 10;

/// Connection windows, both sides: as large as HTTP/2 allows. In h2 a connection's window is
/// given back only as each stream's data is taken, so a smaller one would let streams that
/// are not read (a client that never reads, a server that is slow to) stall every other call
/// on the connection; the stream windows, [`STREAM_WINDOW`] each, bound what the gate holds.
pub const CONN_WINDOW: u32 = (1 << 31) - 1;

/// How long stop waits, after the forwarded calls are cut, for their statuses to be written
/// before it closes the connections; also how long a connection told to go away (idle, or
/// at the end) may take to answer the GOAWAY's ping before it is closed.
pub const STOP_FLUSH_WAIT: Duration = Duration::from_millis(500);
const DRAIN_WAIT: Duration = Duration::from_secs(1);

/// A one-way switch that tasks can wait on.
#[derive(Default)]
pub struct Switch {
    on: AtomicBool,
    notify: Notify,
}

impl Switch {
    pub fn is_on(&self) -> bool {
        self.on.load(Ordering::Acquire)
    }

    pub fn turn_on(&self) {
        self.on.store(true, Ordering::Release);
        self.notify.notify_waiters();
    }

    pub async fn wait(&self) {
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.is_on() {
                return;
            }
            notified.await;
        }
    }
}

/// Counts while alive (calls open, calls forwarded, connections).
pub struct Counted(Arc<AtomicI64>);

impl Counted {
    fn new(counter: &Arc<AtomicI64>) -> Counted {
        counter.fetch_add(1, Ordering::AcqRel);
        Counted(counter.clone())
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

type Io = Box<dyn AsyncReadWrite>;
pub trait AsyncReadWrite: AsyncRead + AsyncWrite + Send + Unpin {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin> AsyncReadWrite for T {}

pub struct Gate {
    pub cfg: Config,
    pub log: Arc<Logger>,
    upstream: Upstream,
    admission: Arc<Admission>,
    tls: Option<tokio_rustls::TlsAcceptor>,
    h2: h2::server::Builder,

    /// Calls in the gate: held for their first message, or forwarded.
    pub open: Arc<AtomicI64>,
    /// Calls opened upstream and not yet ended.
    pub forwarded: Arc<AtomicI64>,
    pub connections: Arc<AtomicI64>,

    /// On at SIGTERM: new calls are refused, held ones too.
    pub stopping: Switch,
    /// On at the end of --shutdown-timeout: forwarded calls are cut.
    pub forced: Switch,
    /// On when stop is done: connections are closed.
    pub closing: Switch,

    /// The loop that relays forwarded calls and serves the connections that carried one
    /// (this one runs the public port's accepts, at a lower priority: main.rs).
    serving: tokio::runtime::Handle,
}

/// A set-up connection and what its task keeps between polls, so that it can move between
/// the two loops.
struct Link {
    conn: h2::server::Connection<Sniffed<Io>, Bytes>,
    ping_pong: h2::PingPong,
    state: Arc<ConnState>,
    peer: Arc<str>,
    /// The client's [`address_group`], and its count among that address's open connections.
    address: Arc<str>,
    _connected: Option<Connected>,
    _counted: Counted,
    far: Instant,
    age_at: Instant,
    /// The connection is dropped then (age's grace, or a drain).
    cut_at: Instant,
    going_away: bool,
    aged: bool,
    ping_sent: Option<Instant>,
}

impl Gate {
    pub fn new(cfg: Config, log: Arc<Logger>, tls: Option<tokio_rustls::TlsAcceptor>) -> Result<Gate, String> {
        let upstream = Upstream::new(&cfg.upstream)?;
        let mut h2 = h2::server::Builder::new();
        h2.initial_window_size(STREAM_WINDOW)
            .initial_connection_window_size(CONN_WINDOW)
            .max_concurrent_streams(cfg.max_streams_per_connection)
            .max_header_list_size(MAX_HEADER_LIST_BYTES)
            // What h2 takes in for a stream the gate has not yet taken from it is bounded by
            // the stream's window; what it buffers to send is bounded by this.
            .max_send_buffer_size(STREAM_WINDOW as usize);
        Ok(Gate {
            admission: Arc::new(Admission::new(
                cfg.max_streams_per_address,
                cfg.max_connections_per_address,
                cfg.max_open_connections_per_address,
            )),
            cfg,
            log,
            upstream,
            tls,
            h2,
            open: Arc::new(AtomicI64::new(0)),
            forwarded: Arc::new(AtomicI64::new(0)),
            connections: Arc::new(AtomicI64::new(0)),
            stopping: Switch::default(),
            forced: Switch::default(),
            closing: Switch::default(),
            serving: tokio::runtime::Handle::current(),
        })
    }

    /// Serves the public port (until the process exits).
    pub async fn serve(self: Arc<Self>, listener: TcpListener) {
        loop {
            match listener.accept().await {
                Ok((tcp, addr)) => {
                    let address: Arc<str> = address_group(&addr, self.cfg.ipv6_prefix_length).into();
                    match self.admission.connect(&address) {
                        Ok(connected) => {
                            let _ = tcp.set_nodelay(true);
                            tokio::spawn(self.clone().serve_connection(tcp, addr, address, connected));
                        }
                        Err(too_many) => self.refuse_connection(tcp, &address, &too_many),
                    }
                }
                Err(e) => {
                    // Out of file descriptors, most likely: wait a little, as Go's server does.
                    self.log.refusal("ACCEPT_FAILED", || format!("could not accept a connection: {e}"));
                    sleep(Duration::from_millis(5)).await;
                }
            }
        }
    }

    /// Closes a connection over its address's open-connections cap at once, in the accept
    /// loop: it costs no task and no TLS or HTTP/2 set-up, and its file descriptor is free
    /// before the next accept. Nothing is sent first: gRPC clients (gRPC core's, measured
    /// with grpcio) take a GOAWAY before the handshake for a graceful goodbye, reconnect at
    /// once, and hold their call until its deadline, over a hundred connections a second,
    /// where a closed socket is a failed connection: the call fails UNAVAILABLE at once and
    /// reconnections back off.
    fn refuse_connection(&self, tcp: TcpStream, address: &str, too_many: &TooManyOpen) {
        self.log.refusal(refusal::TOO_MANY_OPEN_CONNECTIONS, || {
            format!(
                "refused a connection from {address}: {}: {}",
                refusal::TOO_MANY_OPEN_CONNECTIONS,
                too_many.message()
            )
        });
        drop(tcp);
    }

    /// SIGTERM: keep the port and answer new calls (and calls still held for their first
    /// message) with UNAVAILABLE SERVER_SHUTTING_DOWN; let the forwarded calls end with the
    /// upstream's status; after `timeout` cut the ones left with the same status. Returns
    /// how many were cut, once the connections are closed.
    pub async fn stop(&self, timeout: Duration) -> i64 {
        self.stopping.turn_on();
        let deadline = Instant::now() + timeout;
        while self.forwarded.load(Ordering::Acquire) > 0 && Instant::now() < deadline {
            sleep(Duration::from_millis(20)).await;
        }
        let cut = self.forwarded.load(Ordering::Acquire);
        self.forced.turn_on();
        // Held calls saw stopping and forwarded ones are cut: give the statuses a moment to
        // be written; then close the connections, at once where a call is still open (a
        // client that never reads would otherwise hold the exit up).
        let end = Instant::now() + STOP_FLUSH_WAIT;
        while self.open.load(Ordering::Acquire) > 0 && Instant::now() < end {
            sleep(Duration::from_millis(10)).await;
        }
        self.closing.turn_on();
        let end = Instant::now() + STOP_FLUSH_WAIT;
        while self.connections.load(Ordering::Acquire) > 0 && Instant::now() < end {
            sleep(Duration::from_millis(10)).await;
        }
        cut
    }

    /// One client connection, from its TLS and HTTP/2 set-up to its close. It starts on the
    /// admission loop, where this task runs, and moves to the serving loop once a call on it
    /// has been forwarded ([`crate::movable`]). `address` is its client's [`address_group`],
    /// whose open connections `connected` counts it in until it ends.
    async fn serve_connection(
        self: Arc<Self>,
        tcp: TcpStream,
        addr: SocketAddr,
        address: Arc<str>,
        connected: Option<Connected>,
    ) {
        let counted = Counted::new(&self.connections);
        let peer: Arc<str> = peer_name(&addr).into();
        let state = Arc::new(ConnState::new());
        let (tcp, mover) = movable(tcp);
        let setup = async {
            let io: Io = match &self.tls {
                Some(acceptor) => Box::new(acceptor.accept(tcp).await.ok()?),
                None => Box::new(tcp),
            };
            self.h2.handshake::<_, Bytes>(Sniffed::new(io, state.clone())).await.ok()
        };
        let handshake_timeout = self.cfg.handshake_timeout.max(Duration::from_millis(1));
        let mut conn = match tokio::time::timeout(handshake_timeout, setup).await {
            Ok(Some(conn)) => conn,
            _ => {
                self.log.debug(&format!("closed a connection from {peer} that did not set up HTTP/2 in time"));
                return;
            }
        };
        let ping_pong = conn.ping_pong().expect("the first call of ping_pong");
        let far = Instant::now() + LONGEST;
        let at_most = |d: Duration| if d >= LONGEST { far } else { Instant::now() + d };
        // gRPC-Go spreads connection ages by +-10% so that connections made together do not
        // all go away together.
        let age = self.cfg.max_connection_age;
        let age_at = if age.is_zero() { far } else { at_most(jitter(age)) };
        let link = Link {
            conn,
            ping_pong,
            state,
            peer,
            address,
            _connected: connected,
            _counted: counted,
            far,
            age_at,
            cut_at: far,
            going_away: false,
            aged: false,
            ping_sent: None,
        };
        let Some(link) = self.drive(link, true).await else { return };
        if let Err(e) = mover.rebind(&self.serving) {
            self.log.debug(&format!("closed a connection from {}: it could not move: {e}", link.peer));
            return;
        }
        let gate = self.clone();
        self.serving.spawn(async move {
            gate.drive(link, false).await;
        });
    }

    /// Serves a set-up connection until it closes, or, when `may_move`, until a call on it
    /// has been forwarded: then it is handed back to be moved to the serving loop.
    async fn drive(self: &Arc<Self>, mut link: Link, may_move: bool) -> Option<Link> {
        let idle = self.cfg.max_connection_idle;
        let keepalive = self.cfg.keepalive.max(Duration::from_millis(1));
        let keepalive_timeout = self.cfg.keepalive_timeout.max(Duration::from_millis(1));
        let grace = self.cfg.max_connection_age_grace.max(Duration::from_millis(1));
        let far = link.far;
        let at_most = |d: Duration| if d >= LONGEST { far } else { Instant::now() + d };
        loop {
            if may_move && link.state.forwarded_once() {
                return Some(link);
            }
            let idle_at = if idle.is_zero() || link.going_away || link.state.active() > 0 {
                far
            } else {
                (link.state.idle_since() + idle).min(far)
            };
            let ping_at = match link.ping_sent {
                Some(sent) => sent + keepalive_timeout,
                None => (link.state.last_read() + keepalive).min(far),
            };
            tokio::select! {
                accepted = link.conn.accept() => match accepted {
                    Some(Ok((request, respond))) => {
                        let active = link.state.call_started();
                        tokio::spawn(self.clone().handle(link.address.clone(), link.peer.clone(), link.state.clone(), active, request, respond));
                    }
                    Some(Err(e)) => {
                        self.log.debug(&format!("connection from {} ended: {e}", link.peer));
                        break;
                    }
                    None => break,
                },
                _ = link.state.wake.notified() => {
                    if link.state.too_many_pings.load(Ordering::Relaxed) && !link.going_away {
                        self.log.refusal("TOO_MANY_PINGS", || format!(
                            "closed a connection from {}: too_many_pings", link.address));
                        link.conn.abrupt_shutdown(Reason::ENHANCE_YOUR_CALM);
                        link.going_away = true;
                        link.cut_at = link.cut_at.min(Instant::now() + DRAIN_WAIT);
                    } else if link.state.oversize_headers.load(Ordering::Relaxed) && !link.going_away {
                        self.log.refusal("HEADER_LIST_TOO_LARGE", || format!(
                            "closed a connection from {}: a header block over {MAX_HEADER_LIST_BYTES} bytes", link.address));
                        link.conn.abrupt_shutdown(Reason::PROTOCOL_ERROR);
                        link.going_away = true;
                        link.cut_at = link.cut_at.min(Instant::now() + DRAIN_WAIT);
                    }
                }
                _ = sleep_until(idle_at.into()) => {
                    if link.state.active() == 0 && Instant::now() >= link.state.idle_since() + idle {
                        link.conn.graceful_shutdown();
                        link.going_away = true;
                        link.cut_at = link.cut_at.min(Instant::now() + DRAIN_WAIT);
                    }
                }
                _ = sleep_until(link.age_at.into()), if !link.aged => {
                    link.aged = true;
                    link.conn.graceful_shutdown();
                    link.going_away = true;
                    link.cut_at = link.cut_at.min(at_most(grace));
                }
                _ = sleep_until(ping_at.into()) => match link.ping_sent {
                    Some(sent) if link.state.last_read_ms() < link.state.ms(sent) => {
                        self.log.debug(&format!("closed a connection from {}: a ping went unanswered", link.peer));
                        break;
                    }
                    Some(_) => link.ping_sent = None,
                    None if Instant::now() >= link.state.last_read() + keepalive
                        && link.ping_pong.send_ping(Ping::opaque()).is_ok() => link.ping_sent = Some(Instant::now()),
                    None => {}
                },
                _ = poll_fn(|cx| link.ping_pong.poll_pong(cx)), if link.ping_sent.is_some() => link.ping_sent = None,
                _ = sleep_until(link.cut_at.into()) => break,
                _ = self.closing.wait(), if !link.going_away => {
                    link.going_away = true;
                    if link.state.active() > 0 {
                        break;
                    }
                    link.conn.graceful_shutdown();
                    link.cut_at = link.cut_at.min(Instant::now() + STOP_FLUSH_WAIT);
                }
            }
        }
        None
    }

    /// One call, from admission to its end; `address` is its client's [`address_group`],
    /// `peer` its connection's (gRPC's peer form, ip:port).
    ///
    /// It runs where its connection is; once the first message is in, the rest of the call
    /// (opening it upstream, relaying both ways) runs on the serving loop, and the connection
    /// is told to follow.
    async fn handle(
        self: Arc<Self>,
        address: Arc<str>,
        peer: Arc<str>,
        state: Arc<ConnState>,
        active: ActiveCall,
        request: Request<RecvStream>,
        respond: SendResponse<Bytes>,
    ) {
        let mut client = Client { respond, send: None };
        let (parts, body) = request.into_parts();
        if self.stopping.is_on() {
            self.log.refusal(refusal::SHUTTING_DOWN, || {
                format!("refused a call from {address}: {}", refusal::SHUTTING_DOWN)
            });
            return client.end(&refusal::shutting_down());
        }
        let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
        let size = metadata_bytes(path, parts.uri.authority().map(|a| a.as_str()), &parts.headers);
        if size > MAX_METADATA_BYTES {
            // Before it is held, as the Python server would refuse it.
            return client.end(&refusal::metadata_too_large(size, MAX_METADATA_BYTES));
        }
        let ticket = match self.admission.admit(&address, &peer) {
            Ok(ticket) => ticket,
            Err(refused) => {
                let reason = refused.reason.unwrap_or("REFUSED");
                self.log.refusal(reason, || format!("refused a call from {address}: {reason}"));
                return client.end(&refused);
            }
        };
        let open = Counted::new(&self.open);
        let deadline = parts.headers.get("grpc-timeout").and_then(|v| parse_timeout(v.as_bytes()));
        let deadline = deadline.map(|d| Instant::now() + d);
        let encoding = parts.headers.get("grpc-encoding").and_then(|v| v.to_str().ok());
        let mut reader = Reader::new(body, Framer::new(self.cfg.max_message_bytes, encoding));
        // Held with the call: its path and the metadata it will forward, copied out of the
        // header block, and nothing else. The rest (keys gRPC does not count, which only the
        // 64 KiB transport cap bounds) and the block's buffer, which any value h2 did not
        // have to unpack still points into, are freed before the wait.
        let held = Held { path: path.to_string(), metadata: client_metadata(&parts.headers) };
        drop(parts);

        // The first message: only then is anything opened upstream. A silent stream costs
        // the Python process nothing, and one the client drops while held never reaches it.
        let first_timeout = self.cfg.first_message_timeout;
        let late_at = if first_timeout.is_zero() || first_timeout >= LONGEST {
            None
        } else {
            Some(Instant::now() + first_timeout)
        };
        let first = tokio::select! {
            read = reader.next() => match read {
                Ok(first) => first,
                Err(ReadError::Refused(refused)) => return client.end(&refused),
                Err(ReadError::Gone) => return client.reset(),
            },
            _ = sleep_until_some(late_at) => {
                self.log.refusal(refusal::FIRST_MESSAGE_TIMEOUT, || {
                    format!("closed a stream from {address}: {}", refusal::FIRST_MESSAGE_TIMEOUT)
                });
                return client.end(&refusal::first_message_late(first_timeout));
            }
            _ = sleep_until_some(deadline) => return client.end(&deadline_exceeded()),
            _ = poll_fn(|cx| client.respond.poll_reset(cx)) => return,
            _ = self.stopping.wait() => return client.end(&refusal::shutting_down()),
        };
        if self.stopping.is_on() {
            return client.end(&refusal::shutting_down()); // the first message and SIGTERM came together
        }
        state.forwarded();
        let gate = self.clone();
        self.serving.spawn(async move {
            gate.forward(&peer, &held, client, reader, first, deadline).await;
            drop((ticket, open, active));
        });
    }

    /// Opens the upstream call and relays it both ways until the upstream's final status,
    /// which goes back to the client unchanged (headers, messages, trailers). The client's
    /// deadline and cancellation reach the upstream, and so does the gate's forced stop.
    async fn forward(
        &self,
        peer: &Arc<str>,
        held: &Held,
        mut client: Client,
        mut reader: Reader,
        first: Option<Bytes>,
        deadline: Option<Instant>,
    ) {
        let _forwarded = Counted::new(&self.forwarded);
        let headers = self.outgoing(&held.metadata, peer, deadline);
        let path = &held.path;
        let make = || {
            let mut request = Request::builder()
                .method("POST")
                .uri(format!("http://localhost{path}"))
                .body(())
                .expect("a valid request");
            *request.headers_mut() = headers.clone();
            request
        };
        let (response, mut up) = match self.upstream.open(make).await {
            Ok(call) => call,
            Err(e) => {
                if self.forced.is_on() {
                    return client.end(&refusal::shutting_down());
                }
                self.log.refusal("UPSTREAM_UNREACHABLE", || format!("could not open a call to the server: {e}"));
                return client.end(&refusal::unreachable());
            }
        };

        // The two directions borrow the streams; they are done with at the end of this block.
        let ending = {
            let requests = async {
                let mut next = first;
                let half_closed = next.is_none();
                let mut opening = true;
                while let Some(message) = next {
                    // The first message goes out with the call's HEADERS, in one write: the new
                    // stream has no window from the upstream until its HEADERS are sent, and
                    // waiting for one would cost every call a write and a wake-up more on both
                    // sides. It is one message, at most --max-message-bytes, which the gate
                    // holds already; the ones after it wait for the window.
                    let sent = if std::mem::take(&mut opening) {
                        up.send_data(message, false).map_err(|_| ())
                    } else {
                        send_all(&mut up, message).await
                    };
                    if sent.is_err() {
                        return std::future::pending().await; // the upstream ended: its status follows
                    }
                    next = match reader.next().await {
                        Ok(next) => next,
                        Err(e) => return e,
                    };
                }
                let _ = half_closed;
                let _ = up.send_data(Bytes::new(), true);
                std::future::pending().await
            };
            let responses = relay_responses(response, &mut client);
            tokio::pin!(requests, responses);
            let ending = tokio::select! {
                relayed = &mut responses => relayed,
                failed = &mut requests => match failed {
                    ReadError::Refused(refused) => Ending::Refuse(refused),
                    ReadError::Gone => Ending::ClientGone,
                },
                _ = sleep_until_some(deadline) => Ending::Refuse(deadline_exceeded()),
                _ = self.forced.wait() => Ending::Refuse(refusal::shutting_down()),
            };
            ending
        };
        match ending {
            Ending::Done => {}
            Ending::ClientGone => {
                up.send_reset(Reason::CANCEL);
                client.reset();
            }
            Ending::Refuse(refused) => {
                up.send_reset(Reason::CANCEL);
                client.end(&refused);
            }
            Ending::UpstreamFailed(why) => {
                let refused = if self.forced.is_on() {
                    refusal::shutting_down()
                } else {
                    self.log.debug(&format!("a call's upstream stream failed: {why}"));
                    Refusal::plain(code::UNAVAILABLE, "the server closed the call unexpectedly")
                };
                client.end(&refused);
            }
        }
    }

    /// The metadata sent upstream: the client's, less the keys only the gate may set and
    /// those of the hop, plus the client's address, the gate's secret, and the time left of
    /// the client's deadline.
    fn outgoing(&self, metadata: &HeaderMap, peer: &str, deadline: Option<Instant>) -> HeaderMap {
        let mut out = HeaderMap::with_capacity(metadata.len() + 6);
        for (name, value) in metadata {
            out.append(name.clone(), value.clone());
        }
        out.insert(http::header::CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
        out.insert(http::header::TE, HeaderValue::from_static("trailers"));
        out.insert(http::header::USER_AGENT, HeaderValue::from_static("ziggurat-gate"));
        if let Some(deadline) = deadline {
            let left = deadline.saturating_duration_since(Instant::now());
            out.insert("grpc-timeout", HeaderValue::from_str(&format_timeout(left)).expect("ASCII"));
        }
        out.insert(PEER_KEY, HeaderValue::from_str(peer).expect("a peer name is ASCII"));
        out.insert(SECRET_KEY, HeaderValue::from_str(&self.cfg.secret).unwrap_or(HeaderValue::from_static("")));
        out
    }
}

/// +-10%, as gRPC-Go spreads MaxConnectionAge.
fn jitter(d: Duration) -> Duration {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().subsec_nanos();
    let factor = 0.9 + 0.2 * (f64::from(nanos % 1000) / 1000.0);
    d.mul_f64(factor)
}

async fn sleep_until_some(at: Option<Instant>) {
    match at {
        Some(at) => sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}

fn deadline_exceeded() -> Refusal {
    Refusal::plain(code::DEADLINE_EXCEEDED, "context deadline exceeded")
}

/// What a call keeps of its request headers while it waits for its first message.
struct Held {
    path: String,
    /// [`client_metadata`]: what it will forward.
    metadata: HeaderMap,
}

/// How a forwarded call ended.
enum Ending {
    /// The upstream's status reached the client.
    Done,
    ClientGone,
    /// End the client's call with this (and cancel the upstream's).
    Refuse(Refusal),
    /// The upstream's stream broke before its status.
    UpstreamFailed(String),
}

/// The client's side of a call: its response, once headers are sent.
struct Client {
    respond: SendResponse<Bytes>,
    send: Option<SendStream<Bytes>>,
}

impl Client {
    /// Ends the call with `status`: trailers-only if nothing was sent yet, else trailers.
    fn end(&mut self, status: &Refusal) {
        match self.send.as_mut() {
            Some(send) => {
                let _ = send.send_trailers(status.trailers());
            }
            None => {
                let mut response = Response::new(());
                response.headers_mut().insert(http::header::CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
                status.write_to(response.headers_mut());
                let _ = self.respond.send_response(response, true);
            }
        }
    }

    /// Ends the call without a status (the client is gone).
    fn reset(&mut self) {
        match self.send.as_mut() {
            Some(send) => send.send_reset(Reason::CANCEL),
            None => self.respond.send_reset(Reason::CANCEL),
        }
    }
}

/// Relays the upstream's response to the client: headers, messages as they come (the
/// upstream's window is given back only once the client has taken them: a client that never
/// reads holds the upstream back), then the trailers.
async fn relay_responses(response: h2::client::ResponseFuture, client: &mut Client) -> Ending {
    let response = tokio::select! {
        response = response => response,
        _ = poll_fn(|cx| client.respond.poll_reset(cx)) => return Ending::ClientGone,
    };
    let response = match response {
        Ok(response) => response,
        Err(e) => return Ending::UpstreamFailed(e.to_string()),
    };
    let (parts, mut body) = response.into_parts();
    let mut head = Response::new(());
    *head.status_mut() = parts.status;
    *head.headers_mut() = parts.headers;
    let trailers_only = body.is_end_stream();
    let send = match client.respond.send_response(head, trailers_only) {
        Ok(send) => send,
        Err(_) => return Ending::ClientGone,
    };
    if trailers_only {
        return Ending::Done;
    }
    let send = client.send.insert(send);
    loop {
        let data = tokio::select! {
            data = body.data() => data,
            _ = poll_fn(|cx| send.poll_reset(cx)) => return Ending::ClientGone,
        };
        match data {
            Some(Ok(chunk)) => {
                let n = chunk.len();
                if send_all(send, chunk).await.is_err() {
                    return Ending::ClientGone;
                }
                let _ = body.flow_control().release_capacity(n);
            }
            Some(Err(e)) => return upstream_error(e),
            None => break,
        }
    }
    let trailers = tokio::select! {
        trailers = body.trailers() => trailers,
        _ = poll_fn(|cx| send.poll_reset(cx)) => return Ending::ClientGone,
    };
    match trailers {
        Ok(Some(trailers)) => {
            let _ = send.send_trailers(trailers);
            Ending::Done
        }
        Ok(None) => Ending::Refuse(Refusal::plain(code::INTERNAL, "server closed the stream without sending trailers")),
        Err(e) => upstream_error(e),
    }
}

/// An upstream stream that broke: a reset is the server's (CANCEL is gRPC's cancelled).
fn upstream_error(e: h2::Error) -> Ending {
    match e.reason() {
        Some(Reason::CANCEL) if e.is_remote() => {
            Ending::Refuse(Refusal::plain(code::CANCELLED, "the server cancelled the call"))
        }
        Some(reason) if e.is_reset() => Ending::Refuse(Refusal::plain(
            code::INTERNAL,
            format!("stream terminated by RST_STREAM with error code: {}", reason_name(reason)),
        )),
        _ => Ending::UpstreamFailed(e.to_string()),
    }
}

fn reason_name(reason: Reason) -> String {
    format!("{reason:?}").to_uppercase()
}

/// Sends `data` on `stream` as its peer's window allows (never more than that waits in h2).
async fn send_all(stream: &mut SendStream<Bytes>, mut data: Bytes) -> Result<(), ()> {
    while !data.is_empty() {
        stream.reserve_capacity(data.len());
        let capacity = match poll_fn(|cx| stream.poll_capacity(cx)).await {
            Some(Ok(n)) => n,
            _ => return Err(()),
        };
        if capacity == 0 {
            continue;
        }
        let chunk = data.split_to(capacity.min(data.len()));
        stream.send_data(chunk, false).map_err(|_| ())?;
    }
    Ok(())
}

/// Keys of one hop, set by the gate itself on the next, or only the gate's to set.
fn is_hop_header(key: &str) -> bool {
    matches!(key, "content-type" | "user-agent" | "te" | "host" | "connection")
        || (key.starts_with("grpc-") && key != "grpc-encoding" && key != "grpc-accept-encoding")
}

/// Keys gRPC does not count as a call's metadata (gRPC-Go's reserved headers; it does count
/// content-type, user-agent and :authority).
fn is_reserved(key: &str) -> bool {
    matches!(
        key,
        "te" | "grpc-encoding"
            | "grpc-timeout"
            | "grpc-message-type"
            | "grpc-message"
            | "grpc-status"
            | "grpc-status-details-bin"
    )
}

/// The client's metadata that a call forwards: its keys less those only the gate may set and
/// those of the hop, each value copied (h2's values may point into the whole header block).
pub fn client_metadata(incoming: &HeaderMap) -> HeaderMap {
    let mut out = HeaderMap::with_capacity(incoming.len());
    for (name, value) in incoming {
        let key = name.as_str();
        if key.starts_with(PEER_KEY) || key.starts_with(SECRET_KEY) || is_hop_header(key) {
            continue;
        }
        let mut copy = HeaderValue::from_bytes(value.as_bytes()).unwrap_or_else(|_| value.clone());
        copy.set_sensitive(value.is_sensitive());
        out.append(name.clone(), copy);
    }
    out
}

/// The size of a call's metadata the way the limit counts it: name + value + 32 per field,
/// a binary (-bin) value at its decoded size. :path counts too, as gRPC core (the Python
/// server) counts it: a call holds its path, and the Python server would refuse one that
/// takes it over the limit.
pub fn metadata_bytes(path: &str, authority: Option<&str>, headers: &HeaderMap) -> usize {
    let field = |name: &str, value: &[u8]| {
        let size = if name.ends_with("-bin") {
            let unpadded = value.iter().rev().skip_while(|&&b| b == b'=').count();
            unpadded * 3 / 4
        } else {
            value.len()
        };
        name.len() + size + 32
    };
    let authority = authority.map_or(0, |a| field(":authority", a.as_bytes()));
    field(":path", path.as_bytes())
        + authority
        + headers
            .iter()
            .filter(|(name, _)| !is_reserved(name.as_str()))
            .map(|(name, value)| field(name.as_str(), value.as_bytes()))
            .sum::<usize>()
}

/// grpc-timeout ("100m", "5S", ...) as a duration; None if it is malformed.
pub fn parse_timeout(value: &[u8]) -> Option<Duration> {
    let (&unit, digits) = value.split_last()?;
    if digits.is_empty() || digits.len() > 8 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let n: u64 = std::str::from_utf8(digits).ok()?.parse().ok()?;
    Some(match unit {
        b'H' => Duration::from_secs(n * 3600),
        b'M' => Duration::from_secs(n * 60),
        b'S' => Duration::from_secs(n),
        b'm' => Duration::from_millis(n),
        b'u' => Duration::from_micros(n),
        b'n' => Duration::from_nanos(n),
        _ => return None,
    })
}

/// A duration as grpc-timeout: at most 8 digits, in the finest unit that fits.
pub fn format_timeout(d: Duration) -> String {
    let nanos = d.as_nanos();
    for (unit, per) in [
        ("n", 1u128),
        ("u", 1_000),
        ("m", 1_000_000),
        ("S", 1_000_000_000),
        ("M", 60_000_000_000),
        ("H", 3_600_000_000_000),
    ] {
        let n = nanos.div_ceil(per);
        if n < 100_000_000 {
            return format!("{n}{unit}");
        }
    }
    "99999999H".to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderName;

    #[test]
    fn timeouts_read_and_write_as_grpc_has_them() {
        assert_eq!(parse_timeout(b"100m"), Some(Duration::from_millis(100)));
        assert_eq!(parse_timeout(b"5S"), Some(Duration::from_secs(5)));
        assert_eq!(parse_timeout(b"2H"), Some(Duration::from_secs(7200)));
        assert_eq!(parse_timeout(b"123456789m"), None);
        assert_eq!(parse_timeout(b"m"), None);
        assert_eq!(parse_timeout(b"10x"), None);
        assert_eq!(format_timeout(Duration::from_millis(300)), "300000u");
        assert_eq!(format_timeout(Duration::from_secs(60)), "60000000u");
        assert_eq!(format_timeout(Duration::from_secs(600)), "600000m");
        assert_eq!(format_timeout(Duration::from_secs(1_000_000_000)), "16666667M");
        for d in [Duration::from_nanos(1), Duration::from_millis(59_999), Duration::from_secs(86_400 * 3)] {
            let back = parse_timeout(format_timeout(d).as_bytes()).unwrap();
            assert!(back >= d && back - d < d / 1000 + Duration::from_micros(1), "{d:?} -> {back:?}");
        }
    }

    #[test]
    fn forged_and_hop_keys_are_dropped_and_the_gates_are_added() {
        let cfg = Config { upstream: "unix:/x".into(), secret: "s".repeat(32), ..Config::default() };
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let _inside = runtime.enter(); // the gate keeps a handle to its serving loop
        let gate = Gate::new(cfg, Arc::new(Logger::new(Box::new(std::io::sink()), crate::config::Level::Error)), None)
            .unwrap();
        let mut incoming = HeaderMap::new();
        for (k, v) in [
            ("x-ziggurat-peer", "ipv4:6.6.6.6:666"),
            ("x-ziggurat-peer-bin", "AAAA"),
            ("x-ziggurat-gate", "forged"),
            ("x-ziggurat-gate-anything", "forged"),
            ("authorization", "Bearer seat-token"),
            ("x-trace-bin", "AAEC"),
            ("grpc-timeout", "1S"),
            ("grpc-encoding", "gzip"),
            ("user-agent", "grpc-go"),
            ("content-type", "application/grpc+proto"),
        ] {
            incoming.append(HeaderName::from_static(k), HeaderValue::from_static(v));
        }
        let out = gate.outgoing(&client_metadata(&incoming), "ipv4:1.2.3.4:5", None);
        let keys: Vec<&str> = out.keys().map(|k| k.as_str()).collect();
        assert_eq!(out.get_all(PEER_KEY).iter().collect::<Vec<_>>(), ["ipv4:1.2.3.4:5"]);
        assert_eq!(out.get_all(SECRET_KEY).iter().collect::<Vec<_>>(), ["s".repeat(32).as_str()]);
        assert!(!keys.contains(&"x-ziggurat-peer-bin") && !keys.contains(&"x-ziggurat-gate-anything"));
        assert!(!keys.contains(&"grpc-timeout"));
        assert_eq!(out["authorization"], "Bearer seat-token");
        assert_eq!(out["x-trace-bin"], "AAEC");
        assert_eq!(out["grpc-encoding"], "gzip");
        assert_eq!(out["user-agent"], "ziggurat-gate");
        assert_eq!(out["content-type"], "application/grpc");
        let with_deadline =
            gate.outgoing(&client_metadata(&incoming), "p", Some(Instant::now() + Duration::from_secs(60)));
        let left = parse_timeout(with_deadline["grpc-timeout"].as_bytes()).unwrap();
        assert!(left <= Duration::from_secs(60) && left > Duration::from_secs(59));
    }

    #[test]
    fn a_held_call_keeps_only_the_metadata_it_forwards_and_no_part_of_the_header_block() {
        // h2 hands out values that point into the header block: one buffer here.
        let block = Bytes::from(format!("{}seat-token", "g".repeat(3900)));
        let mut incoming = HeaderMap::new();
        for _ in 0..15 {
            let junk = HeaderValue::from_maybe_shared(block.slice(..3900)).unwrap();
            incoming.append(HeaderName::from_static("grpc-message"), junk);
        }
        incoming.append("grpc-status-details-bin", HeaderValue::from_static("AAAA"));
        incoming.append("te", HeaderValue::from_static("trailers"));
        incoming.append("x-ziggurat-peer", HeaderValue::from_static("ipv4:6.6.6.6:6"));
        incoming.append("grpc-encoding", HeaderValue::from_static("gzip"));
        let mut token = HeaderValue::from_maybe_shared(block.slice(3900..)).unwrap();
        token.set_sensitive(true);
        incoming.append("authorization", token);
        let held = client_metadata(&incoming);
        let keys: Vec<&str> = held.keys().map(|k| k.as_str()).collect();
        assert_eq!(keys, ["grpc-encoding", "authorization"]);
        assert_eq!(held["authorization"], "seat-token");
        assert!(held["authorization"].is_sensitive());
        let range = block.as_ptr_range();
        for value in held.values() {
            assert!(!range.contains(&value.as_bytes().as_ptr()), "a held value points into the header block");
        }
    }

    #[test]
    fn metadata_is_counted_as_grpc_core_counts_it() {
        let mut headers = HeaderMap::new();
        headers.insert("x-big", HeaderValue::from_str(&"b".repeat(100)).unwrap());
        headers.insert("user-agent", HeaderValue::from_static("grpc-go"));
        headers.insert("x-trace-bin", HeaderValue::from_static("AAECAw=="));
        headers.insert("grpc-timeout", HeaderValue::from_static("1S"));
        headers.insert("te", HeaderValue::from_static("trailers"));
        let path = 5 + 2 + 32; // ":path" "/x"
        assert_eq!(metadata_bytes("/x", None, &headers), path + (5 + 100 + 32) + (10 + 7 + 32) + (11 + 4 + 32));
        assert_eq!(metadata_bytes("/x", Some("gate"), &HeaderMap::new()), path + 10 + 4 + 32);
        let long = format!("/{}", "p".repeat(16 << 10));
        assert!(metadata_bytes(&long, None, &HeaderMap::new()) > MAX_METADATA_BYTES);
    }
}
