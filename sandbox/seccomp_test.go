package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/elastic/go-seccomp-bpf/arch"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// On x86-64 every listed call exists, so none is silently dropped.
func TestSeccompProgram(t *testing.T) {
	prog, err := seccompProgram()
	require.NoError(t, err)
	require.NotEmpty(t, prog)
	require.Zero(t, len(prog)%8, "struct sock_filter is 8 bytes")
	require.LessOrEqual(t, len(prog)/8, 4096, "BPF_MAXINSNS")
	if runtime.GOARCH == "amd64" {
		info, err := arch.GetInfo("")
		require.NoError(t, err)
		assert.Len(t, seccompDeniedNames(info, "amd64"), len(seccompDenied)+len(seccompDeniedAMD64))
	}
}

// probeSource calls each system call named on its command line
// ("name:number[:first argument]", the other arguments all ones, which makes
// every call fail harmlessly even for root) and prints its errno.
// "i386-getpid" enters the kernel through the 32-bit int 0x80 gate.
const probeSource = `package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

func main() {
	for _, a := range os.Args[1:] {
		f := strings.Split(a, ":")
		var errno uintptr
		if f[0] == "i386-getpid" {
			if r := int32(int80(20)); r < 0 {
				errno = uintptr(-r)
			}
		} else {
			nr, _ := strconv.ParseUint(f[1], 0, 64)
			args := [6]uintptr{^uintptr(0), ^uintptr(0), ^uintptr(0), ^uintptr(0), ^uintptr(0), ^uintptr(0)}
			if len(f) > 2 {
				v, _ := strconv.ParseUint(f[2], 0, 64)
				args[0] = uintptr(v)
			}
			_, _, e := syscall.Syscall6(uintptr(nr), args[0], args[1], args[2], args[3], args[4], args[5])
			errno = uintptr(e)
		}
		fmt.Printf("%s %d\n", f[0], errno)
	}
}
`

const probeAMD64 = `package main

func int80(nr uintptr) uintptr
`

const probeAMD64Asm = `#include "textflag.h"

// func int80(nr uintptr) uintptr
TEXT ·int80(SB),NOSPLIT,$0-16
	MOVQ nr+0(FP), AX
	XORQ BX, BX
	XORQ CX, CX
	XORQ DX, DX
	INT $0x80
	MOVQ AX, ret+8(FP)
	RET
`

const probeOther = `//go:build !amd64

package main

func int80(nr uintptr) uintptr { return 0 }
`

// buildProbe compiles the probe into dir with the go command the tests run
// with.
func buildProbe(t *testing.T, dir string) string {
	t.Helper()
	src := t.TempDir()
	for name, c := range map[string]string{
		"go.mod": "module probe\n\ngo 1.21\n", "main.go": probeSource,
		"int80_amd64.go": probeAMD64, "int80_amd64.s": probeAMD64Asm, "int80_other.go": probeOther,
	} {
		require.NoError(t, os.WriteFile(filepath.Join(src, name), []byte(c), 0o644))
	}
	bin := filepath.Join(dir, "probe")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build probe: %s", out)
	return bin
}

func parseProbe(t *testing.T, out string) map[string]int {
	t.Helper()
	got := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		require.Len(t, f, 2, "probe line %q", line)
		n, err := strconv.Atoi(f[1])
		require.NoError(t, err)
		got[f[0]] = n
	}
	return got
}

// TestBwrapSeccomp runs the probe inside the sandbox, where every listed call
// must fail with EPERM (clone3 and openat2 with ENOSYS, so libc and Go fall
// back to clone and openat),
// and outside, where the same calls fail differently or succeed: the filter,
// not the arguments, refuses them.
func TestBwrapSeccomp(t *testing.T) {
	sb := newBwrap(t, Config{})
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatal("the go command is needed to build the probe")
	}
	ws := t.TempDir()
	bin := buildProbe(t, ws)
	info, err := arch.GetInfo("")
	require.NoError(t, err)

	want := map[string]int{} // errno inside
	var args []string
	for _, n := range seccompDeniedNames(info, runtime.GOARCH) {
		args = append(args, fmt.Sprintf("%s:%d", n, info.SyscallNames[n]))
		want[n] = int(syscall.EPERM)
	}
	special := []struct {
		name, spec string
		errno      syscall.Errno
	}{
		// clone with namespace flags (CLONE_NEWUSER|CLONE_FS: outside, an
		// invalid combination, so nothing is created there either).
		{"clone-newuser", fmt.Sprintf("%d:0x10000200", info.SyscallNames["clone"]), syscall.EPERM},
		{"socket-vsock", fmt.Sprintf("%d:40", info.SyscallNames["socket"]), syscall.EPERM},
		{"socketpair-vsock", fmt.Sprintf("%d:40", info.SyscallNames["socketpair"]), syscall.EPERM},
		{"clone3", fmt.Sprint(info.SyscallNames["clone3"]), syscall.ENOSYS},
		// openat2 hides its mode from the filter as clone3 its flags.
		{"openat2", fmt.Sprint(info.SyscallNames["openat2"]), syscall.ENOSYS},
	}
	if runtime.GOARCH == "amd64" {
		special = append(special,
			struct {
				name, spec string
				errno      syscall.Errno
			}{"x32-getpid", fmt.Sprint(x32SyscallBit | info.SyscallNames["getpid"]), syscall.EPERM},
			struct {
				name, spec string
				errno      syscall.Errno
			}{"i386-getpid", "0", syscall.EPERM})
	}
	for _, s := range special {
		args = append(args, s.name+":"+s.spec)
		want[s.name] = int(s.errno)
	}
	// Allowed calls stay allowed.
	args = append(args, fmt.Sprintf("getpid:%d", info.SyscallNames["getpid"]))
	want["getpid"] = 0

	res, err := sb.Run(context.Background(), Request{Workspace: ws, Argv: append([]string{bin}, args...), Timeout: 30 * time.Second})
	require.NoError(t, err)
	require.Zero(t, res.ExitCode, "stderr=%q", res.Stderr)
	inside := parseProbe(t, res.Stdout)

	out, err := exec.Command(bin, args...).Output()
	require.NoError(t, err)
	outside := parseProbe(t, string(out))

	differ := 0
	for name, w := range want {
		assert.Equal(t, w, inside[name], "%s inside: errno %d, want %d", name, inside[name], w)
		t.Logf("%-20s inside %-3d outside %d", name, inside[name], outside[name])
		if outside[name] != inside[name] {
			differ++
		} else if name != "getpid" && os.Geteuid() == 0 {
			// As root nothing here fails with EPERM for lack of privilege.
			t.Errorf("%s: same errno %d outside the sandbox; the filter is not shown to be the cause", name, inside[name])
		}
	}
	assert.Greater(t, differ, len(want)/2, "most calls must behave differently outside")
}

// seccompOn fails a script unless the seccomp filter is installed.
const seccompOn = `grep -q '^Seccomp:[[:space:]]*2' /proc/self/status && `

// Ordinary builds still work under the filter: a shell project with make and
// a Node project (npm run build, npm test, node's own test runner); the Go
// project (go vet, go test) is TestBwrapGoProject, whose script checks the
// filter the same way. Each script first checks that the filter is on.
func TestBwrapBuildsUnderSeccomp(t *testing.T) {
	sb := newBwrap(t, Config{})
	tests := []struct {
		name   string
		needs  string
		files  map[string]string
		script string
		want   string
	}{
		{name: "shell project with make", needs: "make", files: map[string]string{
			"build.sh": "set -e\nmkdir -p out\nprintf '#!/bin/sh\\necho \"hello $1\"\\n' > out/greet\nchmod +x out/greet\n",
			"test.sh":  "set -e\ntest \"$(./out/greet world)\" = 'hello world'\necho PASS\n",
			"Makefile": "all: test\nbuild:\n\tbash build.sh\ntest: build\n\tbash test.sh\n",
		}, script: "make", want: "PASS"},
		{name: "node project", needs: "node", files: map[string]string{
			"package.json": `{"name":"tiny","version":"1.0.0","private":true,"scripts":{"build":"node build.js","test":"node --test"}}`,
			"build.js":     "const fs = require('fs');\nfs.mkdirSync('dist', {recursive: true});\nfs.writeFileSync('dist/add.js', 'module.exports = (a, b) => a + b;\\n');\n",
			"add.test.js":  "const test = require('node:test');\nconst assert = require('node:assert');\nconst add = require('./dist/add.js');\ntest('adds', () => assert.strictEqual(add(2, 3), 5));\n",
		}, script: "npm run build && npm test", want: "pass 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := exec.LookPath(tc.needs); err != nil {
				if os.Getenv("CI") != "" {
					t.Fatalf("%s is not installed (CI must have it): %v", tc.needs, err)
				}
				t.Skipf("%s is not installed", tc.needs)
			}
			ws := t.TempDir()
			for n, c := range tc.files {
				writeFile(t, filepath.Join(ws, n), c)
			}
			res, err := sb.Run(context.Background(), Request{Workspace: ws, Argv: bash(seccompOn + tc.script), Timeout: 5 * time.Minute})
			require.NoError(t, err)
			require.Zero(t, res.ExitCode, "stdout=%q stderr=%q", res.Stdout, res.Stderr)
			assert.Contains(t, res.Stdout, tc.want)
		})
	}
}
