package devserver

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestLoopbackHost(t *testing.T) {
	for host, want := range map[string]bool{
		"127.0.0.1:8233":       true,
		"127.0.0.1":            true,
		"127.1.2.3:80":         true,
		"localhost:8233":       true,
		"LOCALHOST":            true,
		"[::1]:8233":           true,
		"::1":                  true,
		"":                     false,
		"attacker.example":     false,
		"localhost.attacker":   false,
		"127.0.0.1.nip.io:823": false,
		"10.0.0.1:8233":        false,
		"[::]:8233":            false,
		"0.0.0.0:8233":         false,
	} {
		assert.Equal(t, want, loopbackHost(host), "%q", host)
	}
}
