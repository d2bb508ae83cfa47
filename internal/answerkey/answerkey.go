// Package answerkey signs and checks the identity a channel vouches for.
//
// A call that needs N approvals (settings "approvals") counts only answers
// whose person a channel verified: the Slack endpoint checks Slack's request
// signature and knows the user ID, a Temporal client does not (anyone who
// may send an Update may write any name in "by"). The channel runs in a
// worker, so it signs what it verified with a key only the workers hold,
// and the job checks the signature in a local activity before it counts
// the answer. The signature binds the job, the call, the decision, the
// channel and the identity, so it cannot be replayed for another call.
package answerkey

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/custos-dev/custos/internal/statedir"
)

// EnvKey is the environment variable that sets the key (base64, at least
// 32 bytes): every worker of a deployment that runs on several hosts needs
// the same one. Without it a worker uses (and makes) the key file in its
// state directory, which serves every worker of one machine and user.
const EnvKey = "CUSTOS_ANSWER_KEY"

// FileName is the key file's name in the state directory.
const FileName = "answer.key"

// minKey is the shortest key accepted.
const minKey = 32

// Claim is what a channel vouches for.
type Claim struct {
	Job, Call, Decision, Channel string
	// ID is the person's identity on the channel (a Slack user ID);
	// Groups the groups the channel found them in (Slack user groups).
	ID     string
	Groups []string
}

// message is the signed text: fields separated by NUL, which no field may
// hold, groups sorted.
func (c Claim) message() ([]byte, error) {
	groups := slices.Clone(c.Groups)
	slices.Sort(groups)
	fields := append([]string{"custos-answer-v1", c.Job, c.Call, c.Decision, c.Channel, c.ID}, groups...)
	for _, f := range fields {
		if strings.ContainsRune(f, 0) {
			return nil, errors.New("answerkey: a field holds a NUL byte")
		}
	}
	return []byte(strings.Join(fields, "\x00")), nil
}

// Sign returns the claim's signature under key.
func Sign(key []byte, c Claim) (string, error) {
	msg, err := c.message()
	if err != nil {
		return "", err
	}
	m := hmac.New(sha256.New, key)
	m.Write(msg)
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)), nil
}

// Verify reports whether sig is the claim's signature under key.
func Verify(key []byte, c Claim, sig string) bool {
	want, err := Sign(key, c)
	if err != nil || len(key) < minKey {
		return false
	}
	return hmac.Equal([]byte(want), []byte(sig))
}

// Load returns the workers' key: EnvKey when set (getenv), else the key
// file in stateDir ("" for custos' state directory), made (32 random
// bytes, mode 0600) when missing.
func Load(getenv func(string) string, stateDir string) ([]byte, error) {
	if v := strings.TrimSpace(getenv(EnvKey)); v != "" {
		key, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			key, err = base64.RawURLEncoding.DecodeString(v)
		}
		if err != nil {
			return nil, fmt.Errorf("answerkey: %s is not base64: %w", EnvKey, err)
		}
		if len(key) < minKey {
			return nil, fmt.Errorf("answerkey: %s holds %d bytes; at least %d are needed (head -c 32 /dev/urandom | base64)", EnvKey, len(key), minKey)
		}
		return key, nil
	}
	if stateDir == "" {
		d, err := statedir.Dir()
		if err != nil {
			return nil, fmt.Errorf("answerkey: no %s and no state directory: %w", EnvKey, err)
		}
		stateDir = d
	}
	path := filepath.Join(stateDir, FileName)
	if key, err := readKey(path); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return key, err
	}
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return nil, fmt.Errorf("answerkey: %w", err)
	}
	key := make([]byte, minKey)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("answerkey: %w", err)
	}
	// Written whole beside it, then linked into place: of two workers
	// starting at once, one key wins and neither reads a half-written one.
	f, err := os.CreateTemp(stateDir, ".answer-key-")
	if err != nil {
		return nil, fmt.Errorf("answerkey: %w", err)
	}
	defer os.Remove(f.Name())
	_, err = f.Write(key)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Link(f.Name(), path)
	}
	if errors.Is(err, fs.ErrExist) {
		return readKey(path)
	}
	if err != nil {
		return nil, fmt.Errorf("answerkey: write %s: %w", path, err)
	}
	return key, nil
}

// readKey reads the key file, refusing one others may read or that is not
// a regular file of minKey bytes or more (a half-written one is retried by
// nobody: it is an error the operator sees).
func readKey(path string) ([]byte, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("answerkey: %s must be a regular file only its owner can read (mode %s)", path, fi.Mode())
	}
	key, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("answerkey: %w", err)
	}
	if len(key) < minKey {
		return nil, fmt.Errorf("answerkey: %s holds %d bytes, fewer than %d: remove it and restart the worker", path, len(key), minKey)
	}
	return key, nil
}
