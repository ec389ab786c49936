//! Per-address accounting: the connections open from each client address, counted from
//! accept, and the calls open from it and on each of its connections, to enforce the
//! per-address caps before a connection costs more than its socket and a call more than its
//! HTTP/2 stream. The calls' part is the Python guard's accounting
//! (server/ziggurat/api/guard.py), with the same rules and messages, moved in front of
//! the Python process: a call the gate holds for its first message counts as much as one it
//! forwards. The open connections' part is the gate's alone: gRPC Python is never told of a
//! connection that makes no call.
//!
//! "An address" is a group ([`address_group`]): an IPv4 address, or an IPv6 address's
//! network prefix (/64 by default), since one IPv6 client commonly holds a whole /64 and
//! could otherwise spread itself over 2^64 addresses, each with caps of its own.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::sync::{Arc, Mutex};

use crate::refusal::{too_many_connections, too_many_streams, Refusal};

/// What one address holds now: its open connections, and its calls by connection (peer
/// ip:port).
#[derive(Default)]
struct AddressUse {
    open: u64,
    calls: u64,
    calls_by_peer: HashMap<Arc<str>, u64>,
}

pub struct Admission {
    max_streams: u64,     // per address, 0 = no cap
    max_connections: u64, // connections with calls per address, 0 = no cap
    max_open: u64,        // connections open per address, from accept, 0 = no cap
    addresses: Mutex<HashMap<Arc<str>, AddressUse>>,
}

/// One open connection, counted against its address; dropping it counts it out.
pub struct Connected {
    admission: Arc<Admission>,
    address: Arc<str>,
}

/// One admitted call; dropping it counts the call out.
pub struct Ticket {
    admission: Arc<Admission>,
    address: Arc<str>,
    peer: Arc<str>,
}

/// A connection refused for its address's open connections: how many it has open, and the cap.
#[derive(Debug, PartialEq)]
pub struct TooManyOpen {
    pub open: u64,
    pub most: u64,
}

impl TooManyOpen {
    /// What the log says.
    pub fn message(&self) -> String {
        format!(
            "this address has {} connections open, the most the server allows ({}); close some first",
            self.open, self.most
        )
    }
}

impl Admission {
    pub fn new(max_streams: u32, max_connections: u32, max_open: u32) -> Admission {
        Admission {
            max_streams: max_streams.into(),
            max_connections: max_connections.into(),
            max_open: max_open.into(),
            addresses: Mutex::new(HashMap::new()),
        }
    }

    /// Counts a connection just accepted from `address` (an [`address_group`]) in, or refuses
    /// it when the address has the most open connections allowed. None when there is no cap:
    /// nothing is counted then.
    pub fn connect(self: &Arc<Self>, address: &Arc<str>) -> Result<Option<Connected>, TooManyOpen> {
        if self.max_open == 0 {
            return Ok(None);
        }
        let mut addresses = self.addresses.lock().unwrap_or_else(|e| e.into_inner());
        let use_ = addresses.entry(address.clone()).or_default();
        if use_.open >= self.max_open {
            return Err(TooManyOpen { open: use_.open, most: self.max_open });
        }
        use_.open += 1;
        Ok(Some(Connected { admission: self.clone(), address: address.clone() }))
    }

    /// Counts a call from `peer` (gRPC's form, "ipv4:1.2.3.4:5678", one per connection) of
    /// `address` (its [`address_group`]) in, or returns the refusal (TOO_MANY_STREAMS, then
    /// TOO_MANY_CONNECTIONS, in the order Python checks them).
    pub fn admit(self: &Arc<Self>, address: &Arc<str>, peer: &Arc<str>) -> Result<Ticket, Refusal> {
        let address = address.clone();
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

    /// How many connections `address` has open now (as counted: 0 without a cap).
    #[cfg(test)]
    pub fn open_from(&self, address: &str) -> u64 {
        let addresses = self.addresses.lock().unwrap();
        addresses.get(address).map_or(0, |u| u.open)
    }
}

/// Drops an address with no calls and no open connections, so the map holds only the
/// addresses in use.
fn forget_if_idle(addresses: &mut HashMap<Arc<str>, AddressUse>, address: &Arc<str>) {
    if addresses.get(address).is_some_and(|u| u.calls == 0 && u.open == 0) {
        addresses.remove(address);
    }
}

impl Drop for Connected {
    fn drop(&mut self) {
        let mut addresses = self.admission.addresses.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(use_) = addresses.get_mut(&self.address) {
            use_.open = use_.open.saturating_sub(1);
            let address = self.address.clone();
            forget_if_idle(&mut addresses, &address);
        }
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

/// The group a client address is counted in by every per-address cap: an IPv4 address as it
/// is ("ipv4:1.2.3.4", also when it reaches a dual-stack socket as ::ffff:1.2.3.4); an IPv6
/// address by its first `ipv6_prefix` bits ("ipv6:[2001:db8:1:2::]/64"), or as it is
/// ("ipv6:[::1]") when that is 128. An IPv6 zone (link-local addresses) stays in the group:
/// fe80::/64 on two interfaces are two networks.
pub fn address_group(addr: &SocketAddr, ipv6_prefix: u8) -> String {
    match addr {
        SocketAddr::V4(a) => format!("ipv4:{}", a.ip()),
        SocketAddr::V6(a) => {
            if let Some(v4) = a.ip().to_ipv4_mapped() {
                return format!("ipv4:{v4}");
            }
            let zone = if a.scope_id() != 0 { format!("%{}", interface_name(a.scope_id())) } else { String::new() };
            let prefix = ipv6_prefix.min(128);
            if prefix == 128 {
                return format!("ipv6:[{}{zone}]", a.ip());
            }
            let mask = if prefix == 0 { 0 } else { u128::MAX << (128 - u32::from(prefix)) };
            let network = Ipv6Addr::from(u128::from(*a.ip()) & mask);
            format!("ipv6:[{network}{zone}]/{prefix}")
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
            assert_eq!((peer_name(&addr).as_str(), address_group(&addr, 128).as_str()), (peer, key));
        }
        let zoned = SocketAddr::V6(std::net::SocketAddrV6::new("fe80::1".parse().unwrap(), 9, 0, 1));
        assert!(peer_name(&zoned).starts_with("ipv6:[fe80::1%"), "{}", peer_name(&zoned));
    }

    /// Admits a call from `peer` ("ipv4:1.1.1.1:1"), counted in the address `peer` names.
    fn admit(admission: &Arc<Admission>, peer: &str) -> Result<Ticket, Refusal> {
        let (address, _port) = peer.rsplit_once(':').unwrap();
        admission.admit(&address.into(), &peer.into())
    }

    #[test]
    fn ipv4_counts_by_address_and_ipv6_by_its_prefix() {
        let group = |address: &str, prefix: u8| address_group(&address.parse().unwrap(), prefix);
        for (address, prefix, want) in [
            ("1.2.3.4:5", 64, "ipv4:1.2.3.4"),
            ("1.2.3.4:5", 128, "ipv4:1.2.3.4"),
            // IPv4 on a dual-stack socket is IPv4, not the IPv6 /64 ::ffff:0.0.0.0/64 (which
            // would put every IPv4 client in one group).
            ("[::ffff:10.1.2.3]:80", 64, "ipv4:10.1.2.3"),
            ("[2001:db8:1:2:aaaa:bbbb:cccc:dddd]:5", 64, "ipv6:[2001:db8:1:2::]/64"),
            ("[2001:db8:1:2::1]:6", 64, "ipv6:[2001:db8:1:2::]/64"),
            ("[2001:db8:1:3::1]:6", 64, "ipv6:[2001:db8:1:3::]/64"),
            ("[2001:db8:1:2::1]:6", 48, "ipv6:[2001:db8:1::]/48"),
            ("[2001:db8:1:2::1]:6", 56, "ipv6:[2001:db8:1::]/56"),
            ("[2001:db8:1:2ff::1]:6", 56, "ipv6:[2001:db8:1:200::]/56"),
            ("[2001:db8::7]:6", 127, "ipv6:[2001:db8::6]/127"),
            ("[2001:db8::1]:6", 128, "ipv6:[2001:db8::1]"),
            ("[::1]:6", 64, "ipv6:[::]/64"),
            ("[::1]:6", 128, "ipv6:[::1]"),
        ] {
            assert_eq!(group(address, prefix), want, "{address} /{prefix}");
        }
        let zoned = SocketAddr::V6(std::net::SocketAddrV6::new("fe80::1:2".parse().unwrap(), 9, 0, 1));
        let zoned = address_group(&zoned, 64);
        assert!(zoned.starts_with("ipv6:[fe80::%") && zoned.ends_with("]/64"), "{zoned}");
    }

    #[test]
    fn every_cap_counts_an_ipv6_prefix_as_one_address() {
        let admission = Arc::new(Admission::new(2, 0, 2));
        let from = |address: &str| -> (Arc<str>, Arc<str>) {
            let addr: SocketAddr = address.parse().unwrap();
            (address_group(&addr, 64).into(), peer_name(&addr).into())
        };
        let (a, pa) = from("[2001:db8:0:1::a]:1");
        let (b, pb) = from("[2001:db8:0:1::b]:2");
        let (c, pc) = from("[2001:db8:0:1:ffff::c]:3");
        let (other, po) = from("[2001:db8:0:2::a]:1");
        let open = [admission.connect(&a).unwrap(), admission.connect(&b).unwrap()];
        assert_eq!(admission.connect(&c).err(), Some(TooManyOpen { open: 2, most: 2 }));
        let elsewhere = admission.connect(&other).unwrap();
        let calls = [admission.admit(&a, &pa).unwrap(), admission.admit(&b, &pb).unwrap()];
        assert_eq!(admission.admit(&c, &pc).err().unwrap().reason, Some("TOO_MANY_STREAMS"));
        let call_elsewhere = admission.admit(&other, &po).unwrap();
        assert_eq!(admission.calls_from("ipv6:[2001:db8:0:1::]/64"), 2);
        drop((open, elsewhere, calls, call_elsewhere));
        assert!(admission.addresses.lock().unwrap().is_empty());
    }

    #[test]
    fn open_connections_are_capped_per_address_from_accept_and_freed_when_they_close() {
        let admission = Arc::new(Admission::new(0, 0, 3));
        let p = |s: &str| -> Arc<str> { s.into() };
        let (one, two) = (p("ipv4:1.1.1.1"), p("ipv4:2.2.2.2"));
        let mut held: Vec<_> = (0..3).map(|_| admission.connect(&one).unwrap()).collect();
        let refused = admission.connect(&one).err().unwrap();
        assert_eq!(refused, TooManyOpen { open: 3, most: 3 });
        assert_eq!(
            refused.message(),
            "this address has 3 connections open, the most the server allows (3); close some first"
        );
        let other = admission.connect(&two).unwrap();
        assert_eq!((admission.open_from("ipv4:1.1.1.1"), admission.open_from("ipv4:2.2.2.2")), (3, 1));
        // A call on an open connection keeps the address known after its connection closes.
        let call = admission.admit(&one, &p("ipv4:1.1.1.1:7")).unwrap();
        held.pop();
        held.push(admission.connect(&one).unwrap());
        drop((held, other));
        assert_eq!(admission.open_from("ipv4:1.1.1.1"), 0);
        assert_eq!(admission.calls_from("ipv4:1.1.1.1"), 1);
        drop(call);
        assert!(admission.addresses.lock().unwrap().is_empty());
        // 0: no cap, and nothing counted.
        let unlimited = Arc::new(Admission::new(0, 0, 0));
        let many: Vec<_> = (0..2000).map(|_| unlimited.connect(&one).unwrap()).collect();
        assert!(many.iter().all(Option::is_none) && unlimited.addresses.lock().unwrap().is_empty());
    }

    #[test]
    fn calls_per_address_are_capped_then_connections() {
        let admission = Arc::new(Admission::new(3, 2, 0));
        let a1 = admit(&admission, "ipv4:1.1.1.1:1").unwrap();
        let a2 = admit(&admission, "ipv4:1.1.1.1:2").unwrap();
        let refused = admit(&admission, "ipv4:1.1.1.1:3").err().unwrap();
        assert_eq!(refused.reason, Some("TOO_MANY_CONNECTIONS"));
        assert_eq!(
            refused.message,
            "this address has 2 connections in use, the most the server allows (2); share a channel"
        );
        let a3 = admit(&admission, "ipv4:1.1.1.1:1").unwrap();
        let refused = admit(&admission, "ipv4:1.1.1.1:1").err().unwrap();
        assert_eq!(refused.reason, Some("TOO_MANY_STREAMS"));
        assert_eq!(refused.message, "this address has 3 calls open, the most the server allows (3); close some first");
        let other = admit(&admission, "ipv4:2.2.2.2:1").unwrap();
        drop((a1, a2, a3, other));
        assert_eq!(admission.calls_from("ipv4:1.1.1.1"), 0);
        assert!(admission.addresses.lock().unwrap().is_empty());
        let unlimited = Arc::new(Admission::new(0, 0, 0));
        let many: Vec<_> = (0..100).map(|i| admit(&unlimited, &format!("ipv4:3.3.3.3:{i}")).unwrap()).collect();
        assert_eq!(unlimited.calls_from("ipv4:3.3.3.3"), 100);
        drop(many);
    }
}
