package devserver

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Another process of the owner (`starter ui-url`) mints login tokens for a
// running server through the server's private certificate directory: only
// the owner can write there. It writes the token's hash, never the token,
// into a file the gate consumes (removes) on first use, and the server
// writes its UI address there for it to find.

const (
	uiAddressFile = "ui-address"
	uiTokenPrefix = "ui-token-"
	// mintedTokenTTL bounds how long a minted, unused link works.
	mintedTokenTTL = 10 * time.Minute
)

func tokenFile(dir, tok string) string {
	h := sha256.Sum256([]byte(tok))
	return filepath.Join(dir, uiTokenPrefix+hex.EncodeToString(h[:]))
}

// MintUILoginURL returns a new one-time login URL for the Web UI of the
// server whose certificates are in tlsDir. It works for mintedTokenTTL.
func MintUILoginURL(tlsDir string) (string, error) { return MintLoginURLAt(tlsDir, "/") }

// MintLoginURLAt is MintUILoginURL for a link that lands on path (a
// handler the worker mounted there, such as its approval inbox).
func MintLoginURLAt(tlsDir, path string) (string, error) {
	b, err := os.ReadFile(filepath.Join(tlsDir, uiAddressFile))
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("devserver: no Web UI has run with the certificates in %s (start the worker first)", tlsDir)
	}
	if err != nil {
		return "", fmt.Errorf("devserver: reading the Web UI address: %w", err)
	}
	tok, err := randomSecret()
	if err != nil {
		return "", err
	}
	if err := writePrivate(tokenFile(tlsDir, tok), nil); err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)) + loginPath(path) + "?" + tokenParam + "=" + tok, nil
}

// useMintedToken reports whether tok was minted by MintUILoginURL into dir,
// recently, by this user, and uses it up: of two requests racing with the
// same token only one removes the file.
func useMintedToken(dir, tok string, now time.Time) bool {
	if dir == "" {
		return false
	}
	name := tokenFile(dir, tok)
	info, err := os.Lstat(name)
	if err != nil || !info.Mode().IsRegular() || info.Mode().Perm()&0o077 != 0 || ownedByMe(name, info) != nil {
		return false
	}
	if os.Remove(name) != nil {
		return false
	}
	age := now.Sub(info.ModTime())
	return age >= -time.Minute && age <= mintedTokenTTL
}

// forgetUIAddress removes the address file if it is still this server's, so
// `starter ui-url` does not mint links for a UI that is gone.
func (s *Server) forgetUIAddress() {
	name := filepath.Join(s.certs.Dir, uiAddressFile)
	if b, err := os.ReadFile(name); err == nil && strings.TrimSpace(string(b)) == s.uiAddr {
		_ = os.Remove(name)
	}
}
