// Package netproxy is the sandbox's egress proxy: the only way out of a
// command's empty network namespace. It speaks HTTP CONNECT, plain HTTP
// forwarding and SOCKS5 on a socket bound into the sandbox, lets a
// connection through only to a host the netpolicy.Policy allows (denied
// patterns win, an IP literal must be listed itself), and, unless the
// policy allows local binding, never to an address that is not public
// (loopback, private ranges, link-local and the cloud metadata address),
// whatever a name resolves to.
package netproxy
