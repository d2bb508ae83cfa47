package sandbox

import (
	"fmt"
	"os"
)

// protectedEnv are names Request.Env may not pass through: the sandbox sets
// them itself, and letting the worker's values in would point the command at
// the worker's home, caches or proxies.
var protectedEnv = map[string]bool{
	"PATH": true, "HOME": true, "TMPDIR": true, "USER": true, "LOGNAME": true,
	"GOCACHE": true, "GOPATH": true, "GOMODCACHE": true, "GOTOOLCHAIN": true,
	"GOPROXY": true, "LD_PRELOAD": true, "LD_LIBRARY_PATH": true,
	"HTTP_PROXY": true, "HTTPS_PROXY": true, "ALL_PROXY": true, "NO_PROXY": true,
	"http_proxy": true, "https_proxy": true, "all_proxy": true, "no_proxy": true,
	cookieEnv: true,
}

// cookieEnv tags every process of a fallback run so leftovers can be found
// (the same trick as Jenkins' BUILD_ID process-tree killer).
const cookieEnv = "CUSTOS_SANDBOX_RUN"

func validEnvName(n string) bool {
	if n == "" {
		return false
	}
	for i, r := range n {
		ok := r == '_' || (r >= 'A' && r <= 'Z') || (r >= 'a' && r <= 'z') || (i > 0 && r >= '0' && r <= '9')
		if !ok {
			return false
		}
	}
	return true
}

// buildEnv rebuilds the environment from an allowlist: nothing of the worker's
// environment reaches the command except LANG/LC_ALL/TERM and the names the
// request asks for explicitly (settings), so API keys, TEMPORAL_* and cloud
// credentials never do.
func buildEnv(req Request, path, home, tmp string, proxy string, extra map[string]string) ([]string, error) {
	env := map[string]string{}
	for _, n := range req.Env {
		if !validEnvName(n) {
			return nil, fmt.Errorf("sandbox: invalid environment variable name %q", n)
		}
		if protectedEnv[n] {
			return nil, fmt.Errorf("sandbox: environment variable %s is set by the sandbox and cannot be passed through", n)
		}
		if v, ok := os.LookupEnv(n); ok {
			env[n] = v
		}
	}
	for n, v := range req.Vars {
		if !validEnvName(n) || protectedEnv[n] {
			return nil, fmt.Errorf("sandbox: environment variable %q cannot be set for the command", n)
		}
		env[n] = v
	}
	env["LANG"] = "C.UTF-8"
	for _, n := range []string{"LANG", "LC_ALL", "TERM"} {
		if v, ok := os.LookupEnv(n); ok && v != "" {
			env[n] = v
		}
	}
	if env["TERM"] == "" {
		env["TERM"] = "dumb"
	}
	env["PATH"] = path
	env["HOME"] = home
	env["TMPDIR"] = tmp
	env["USER"] = "custos"
	env["LOGNAME"] = "custos"
	// Go tools need writable caches; keep them in the sandbox's /tmp, never
	// download a toolchain or a module (there is no network anyway).
	env["GOCACHE"] = tmp + "/go-build"
	env["GOPATH"] = tmp + "/go"
	env["GOTOOLCHAIN"] = "local"
	env["GOPROXY"] = "off"
	env["GOTELEMETRY"] = "off"
	if proxy != "" {
		for _, n := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"} {
			env[n] = "http://" + proxy
		}
		env["ALL_PROXY"] = "socks5h://" + proxy
		env["all_proxy"] = "socks5h://" + proxy
		env["NO_PROXY"] = ""
		env["no_proxy"] = ""
	}
	for k, v := range extra {
		env[k] = v
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out, nil
}
