// Package lsp drives language servers for custos' LSP tool: a small
// JSON-RPC 2.0 client over a server's stdin and stdout (Content-Length
// framing), the few requests the tool makes (definition, references,
// hover, document symbols, diagnostics), the conversion between the
// 1-based line and column the model reads in Read's output and the
// protocol's 0-based UTF-16 positions, and a pool that keeps one server
// per workspace and language warm and starts a new one when it dies.
//
// The package does no policy: what a server answers is returned with the
// absolute paths it names, and the caller (activities/lsp.go) drops what a
// Read deny rule or the path guard would refuse before the model sees it.
// It starts servers through a Starter, so the same pool runs them on the
// host (HostStarter, for tests) or in custos' sandbox.
package lsp
