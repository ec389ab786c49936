//! Per-address accounting: the calls open from each client address (its IP) and on each of
//! its connections, to enforce the per-address caps before a call costs anything more than
//! its HTTP/2 stream. It is the Python guard's accounting (server/ziggurat/service/guard.py),
//! with the same rules and messages, moved in front of the Python process: a call the gate
//! holds for its first message counts as much as one it forwards.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};

use crate::refusal::{too_many_connections, too_many_streams, Refusal};

/// What one address holds now: its calls, by connection (peer ip:port).
#[derive(Default)]
struct AddressUse {
    calls: u64,
    calls_by_peer: HashMap<Arc<str>, u64>,
}

pub struct Admission {
    max_streams: u64,     // per address, 0 = no cap
    max_connections: u64, // connections with calls per address, 0 = no cap
    addresses: Mutex<HashMap<Arc<str>, AddressUse>>,
}

/// One admitted call; dropping it counts the call out.
pub struct Ticket {
    admission: Arc<Admission>,
    address: Arc<str>,
    peer: Arc<str>,
}

impl Admission {
    pub fn new(max_streams: u32, max_connections: u32) -> Admission {
        Admission {
            max_streams: max_streams.into(),
            max_connections: max_connections.into(),
            addresses: Mutex::new(HashMap::new()),
        }
    }

    /// Counts a call from `peer` (gRPC's form, "ipv4:1.2.3.4:5678") in, or returns the
    /// refusal (TOO_MANY_STREAMS, then TOO_MANY_CONNECTIONS, in the order Python checks them).
    pub fn admit(self: &Arc<Self>, peer: &Arc<str>) -> Result<Ticket, Refusal> {
        let address: Arc<str> = address_of(peer).into();
        let mut addresses = self.addresses.lock().unwrap_or_else(|e| e.into_inner());
        let use_ = addresses.entry(address.clone()).or_default();
        if self.max_streams > 0 && use_.calls >= self.max_streams {
            let calls = use_.calls;
            forget_if_idle(&mut addresses, &address);
            return Err(too_many_streams(calls, self.max_streams));
        }
        let known = use_.calls_by_peer.contains_key(peer);
        if self.max_connections > 0 && !known && use_.calls_by_peer.len() as u64 >= self.max_connections {
            let in_use = use_.calls_by_peer.len() as u64;
            forget_if_idle(&mut addresses, &address);
            return Err(too_many_connections(in_use, self.max_connections));
        }
        use_.calls += 1;
        *use_.calls_by_peer.entry(peer.clone()).or_default() += 1;
        Ok(Ticket { admission: self.clone(), address, peer: peer.clone() })
    }

    /// How many calls `address` ("ipv4:1.2.3.4") has open now.
    #[cfg(test)]
    pub fn calls_from(&self, address: &str) -> u64 {
        let addresses = self.addresses.lock().unwrap();
        addresses.get(address).map_or(0, |u| u.calls)
    }
}

/// Drops an address with no calls, so the map holds only the addresses in use.
fn forget_if_idle(addresses: &mut HashMap<Arc<str>, AddressUse>, address: &Arc<str>) {
    if addresses.get(address).is_some_and(|u| u.calls == 0) {
        addresses.remove(address);
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut addresses = self.admission.addresses.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(use_) = addresses.get_mut(&self.address) {
            use_.calls = use_.calls.saturating_sub(1);
            if let Some(n) = use_.calls_by_peer.get_mut(&self.peer) {
                *n -= 1;
                if *n == 0 {
                    use_.calls_by_peer.remove(&self.peer);
                }
            }
            let address = self.address.clone();
            forget_if_idle(&mut addresses, &address);
        }
    }
}

/// A client's address in gRPC's peer form, the form the Python server's context.peer()
/// gives and its guard splits: ipv4:1.2.3.4:5678 or ipv6:[::1]:5678 (an IPv4 client on a
/// dual-stack socket is ipv4).
pub fn peer_name(addr: &SocketAddr) -> String {
    match addr {
        SocketAddr::V4(a) => format!("ipv4:{}:{}", a.ip(), a.port()),
        SocketAddr::V6(a) => {
            if let Some(v4) = a.ip().to_ipv4_mapped() {
                return format!("ipv4:{}:{}", IpAddr::V4(v4), a.port());
            }
            let zone = if a.scope_id() != 0 { format!("%{}", interface_name(a.scope_id())) } else { String::new() };
            format!("ipv6:[{}{}]:{}", a.ip(), zone, a.port())
        }
    }
}

/// The name of a network interface (an IPv6 zone), or its number if it has none.
fn interface_name(index: u32) -> String {
    let mut buf = [0u8; libc::IF_NAMESIZE];
    // SAFETY: if_indextoname writes at most IF_NAMESIZE bytes, NUL-terminated, into buf.
    let name = unsafe { libc::if_indextoname(index, buf.as_mut_ptr().cast()) };
    if name.is_null() {
        return index.to_string();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// A peer's address without its port (guard.split_peer): ipv4:1.2.3.4:5678 -> ipv4:1.2.3.4.
/// Other forms are their own address.
pub fn address_of(peer: &str) -> &str {
    if peer.len() > 5 && (peer.starts_with("ipv4:") || peer.starts_with("ipv6:")) {
        if let Some(i) = peer.rfind(':') {
            if i >= 5 {
                return &peer[..i];
            }
        }
    }
    peer
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peer_names_have_grpcs_form() {
        for (address, peer, key) in [
            ("127.0.0.1:5678", "ipv4:127.0.0.1:5678", "ipv4:127.0.0.1"),
            ("[::ffff:10.1.2.3]:80", "ipv4:10.1.2.3:80", "ipv4:10.1.2.3"),
            ("[::1]:5678", "ipv6:[::1]:5678", "ipv6:[::1]"),
        ] {
            let addr: SocketAddr = address.parse().unwrap();
            let got = peer_name(&addr);
            assert_eq!((got.as_str(), address_of(&got)), (peer, key));
        }
        let zoned = SocketAddr::V6(std::net::SocketAddrV6::new("fe80::1".parse().unwrap(), 9, 0, 1));
        assert!(peer_name(&zoned).starts_with("ipv6:[fe80::1%"), "{}", peer_name(&zoned));
        assert_eq!(address_of("unix:/x"), "unix:/x");
    }

    #[test]
    fn calls_per_address_are_capped_then_connections() {
        let admission = Arc::new(Admission::new(3, 2));
        let p = |s: &str| -> Arc<str> { s.into() };
        let a1 = admission.admit(&p("ipv4:1.1.1.1:1")).unwrap();
        let a2 = admission.admit(&p("ipv4:1.1.1.1:2")).unwrap();
        let refused = admission.admit(&p("ipv4:1.1.1.1:3")).err().unwrap();
        assert_eq!(refused.reason, Some("TOO_MANY_CONNECTIONS"));
        assert_eq!(
            refused.message,
            "this address has 2 connections in use, the most the server allows (2); share a channel"
        );
        let a3 = admission.admit(&p("ipv4:1.1.1.1:1")).unwrap();
        let refused = admission.admit(&p("ipv4:1.1.1.1:1")).err().unwrap();
        assert_eq!(refused.reason, Some("TOO_MANY_STREAMS"));
        assert_eq!(refused.message, "this address has 3 calls open, the most the server allows (3); close some first");
        let other = admission.admit(&p("ipv4:2.2.2.2:1")).unwrap();
        drop((a1, a2, a3, other));
        assert_eq!(admission.calls_from("ipv4:1.1.1.1"), 0);
        assert!(admission.addresses.lock().unwrap().is_empty());
        let unlimited = Arc::new(Admission::new(0, 0));
        let many: Vec<_> = (0..100).map(|i| unlimited.admit(&p(&format!("ipv4:3.3.3.3:{i}"))).unwrap()).collect();
        assert_eq!(unlimited.calls_from("ipv4:3.3.3.3"), 100);
        drop(many);
    }
}
