package main

import (
	"net"
	"strconv"
	"sync"
)

// admission counts the calls open from each client address (its IP) and on each of its
// connections, to enforce the per-address caps before a call costs anything more than its
// HTTP/2 stream. It is the Python guard's accounting (server/ziggurat/service/guard.py), with
// the same rules and messages, moved in front of the Python process: a call the gate holds
// for its first message counts as much as one it forwards.
type admission struct {
	mu             sync.Mutex
	maxStreams     int // per address, 0 = no cap
	maxConnections int // connections with calls per address, 0 = no cap
	addresses      map[string]*addressUse
}

// addressUse is what one address holds now: its calls, by connection (peer ip:port).
type addressUse struct {
	calls       int
	callsByPeer map[string]int
}

// ticket is one admitted call; release it exactly once.
type ticket struct {
	address string
	peer    string
}

func newAdmission(maxStreams, maxConnections int) *admission {
	return &admission{maxStreams: maxStreams, maxConnections: maxConnections, addresses: map[string]*addressUse{}}
}

// admit counts a call from peer (gRPC's form, "ipv4:1.2.3.4:5678") in, or returns the status
// that refuses it and its reason (TOO_MANY_STREAMS, then TOO_MANY_CONNECTIONS, in the order
// Python checks them).
func (a *admission) admit(peer string) (ticket, string, error) {
	address := addressOf(peer)
	a.mu.Lock()
	defer a.mu.Unlock()
	use := a.addresses[address]
	if use == nil {
		use = &addressUse{callsByPeer: map[string]int{}}
		a.addresses[address] = use
	}
	if a.maxStreams > 0 && use.calls >= a.maxStreams {
		a.forgetIfIdle(address, use)
		return ticket{}, reasonTooManyStreams, tooManyStreams(use.calls, a.maxStreams)
	}
	if _, known := use.callsByPeer[peer]; a.maxConnections > 0 && !known && len(use.callsByPeer) >= a.maxConnections {
		a.forgetIfIdle(address, use)
		return ticket{}, reasonTooManyConnections, tooManyConnections(len(use.callsByPeer), a.maxConnections)
	}
	use.calls++
	use.callsByPeer[peer]++
	return ticket{address: address, peer: peer}, "", nil
}

// release counts an admitted call out.
func (a *admission) release(t ticket) {
	a.mu.Lock()
	defer a.mu.Unlock()
	use := a.addresses[t.address]
	if use == nil {
		return
	}
	use.calls--
	if use.callsByPeer[t.peer]--; use.callsByPeer[t.peer] <= 0 {
		delete(use.callsByPeer, t.peer)
	}
	a.forgetIfIdle(t.address, use)
}

// forgetIfIdle drops an address with no calls, so the map holds only the addresses in use.
func (a *admission) forgetIfIdle(address string, use *addressUse) {
	if use.calls <= 0 {
		delete(a.addresses, address)
	}
}

// callsFrom is how many calls address ("ipv4:1.2.3.4") has open now.
func (a *admission) callsFrom(address string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	if use := a.addresses[address]; use != nil {
		return use.calls
	}
	return 0
}

// peerName is a client's address in gRPC's peer form, the form the Python server's
// context.peer() gives and its guard splits: ipv4:1.2.3.4:5678 or ipv6:[::1]:5678.
func peerName(addr net.Addr) string {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok {
		return addr.Network() + ":" + addr.String()
	}
	port := strconv.Itoa(tcp.Port)
	if ip4 := tcp.IP.To4(); ip4 != nil { // also an IPv4 client on a dual-stack [::] socket
		return "ipv4:" + ip4.String() + ":" + port
	}
	host := tcp.IP.String()
	if tcp.Zone != "" {
		host += "%" + tcp.Zone
	}
	return "ipv6:[" + host + "]:" + port
}

// addressOf is a peer's address without its port (guard.split_peer): ipv4:1.2.3.4:5678 ->
// ipv4:1.2.3.4. Other forms are their own address.
func addressOf(peer string) string {
	if len(peer) > 5 && (peer[:5] == "ipv4:" || peer[:5] == "ipv6:") {
		for i := len(peer) - 1; i >= 5; i-- {
			if peer[i] == ':' {
				return peer[:i]
			}
		}
	}
	return peer
}
