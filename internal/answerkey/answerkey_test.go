package answerkey

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSignBindsEveryField(t *testing.T) {
	key := bytes.Repeat([]byte{7}, 32)
	base := Claim{Job: "j", Call: "c", Decision: "allow", Channel: "slack", ID: "U0ALICE", Groups: []string{"S0OPS", "S0DEV"}}
	sig, err := Sign(key, base)
	require.NoError(t, err)
	assert.True(t, Verify(key, base, sig))
	reordered := base
	reordered.Groups = []string{"S0DEV", "S0OPS"}
	assert.True(t, Verify(key, reordered, sig), "group order does not matter")

	for name, change := range map[string]func(*Claim){
		"job":      func(c *Claim) { c.Job = "j2" },
		"call":     func(c *Claim) { c.Call = "c2" },
		"decision": func(c *Claim) { c.Decision = "deny" },
		"channel":  func(c *Claim) { c.Channel = "web" },
		"id":       func(c *Claim) { c.ID = "U0BOB" },
		"groups":   func(c *Claim) { c.Groups = append(c.Groups, "S0ADMINS") },
		"shifted":  func(c *Claim) { c.Job, c.Call = "j\x00c", "" },
	} {
		t.Run(name, func(t *testing.T) {
			c := base
			c.Groups = append([]string(nil), base.Groups...)
			change(&c)
			assert.False(t, Verify(key, c, sig))
		})
	}
	assert.False(t, Verify(bytes.Repeat([]byte{8}, 32), base, sig), "another key")
	assert.False(t, Verify(key[:16], base, sig), "a short key never verifies")
	assert.False(t, Verify(key, base, ""), "no signature")
}

func TestLoad(t *testing.T) {
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == EnvKey {
				return v
			}
			return ""
		}
	}
	good := bytes.Repeat([]byte{1}, 32)
	t.Run("from the environment", func(t *testing.T) {
		key, err := Load(env(base64.StdEncoding.EncodeToString(good)), "")
		require.NoError(t, err)
		assert.Equal(t, good, key)
	})
	for name, v := range map[string]string{"short": base64.StdEncoding.EncodeToString(good[:16]), "not base64": "%%%"} {
		t.Run("bad environment: "+name, func(t *testing.T) {
			_, err := Load(env(v), t.TempDir())
			assert.ErrorContains(t, err, EnvKey)
		})
	}
	t.Run("made once, then read", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "state")
		k1, err := Load(env(""), dir)
		require.NoError(t, err)
		k2, err := Load(env(""), dir)
		require.NoError(t, err)
		assert.Equal(t, k1, k2)
		assert.Len(t, k1, 32)
		fi, err := os.Stat(filepath.Join(dir, FileName))
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	})
	t.Run("workers starting at once agree", func(t *testing.T) {
		dir := t.TempDir()
		keys := make([][]byte, 8)
		var wg sync.WaitGroup
		for i := range keys {
			wg.Add(1)
			go func() {
				defer wg.Done()
				k, err := Load(env(""), dir)
				assert.NoError(t, err)
				keys[i] = k
			}()
		}
		wg.Wait()
		for _, k := range keys {
			assert.Equal(t, keys[0], k)
		}
	})
	t.Run("readable by others", func(t *testing.T) {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, FileName), good, 0o644))
		_, err := Load(env(""), dir)
		assert.ErrorContains(t, err, "only its owner")
	})
	t.Run("a symlink", func(t *testing.T) {
		dir := t.TempDir()
		other := filepath.Join(t.TempDir(), "k")
		require.NoError(t, os.WriteFile(other, good, 0o600))
		require.NoError(t, os.Symlink(other, filepath.Join(dir, FileName)))
		_, err := Load(env(""), dir)
		assert.ErrorContains(t, err, "regular file")
	})
	t.Run("too short", func(t *testing.T) {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, FileName), good[:5], 0o600))
		_, err := Load(env(""), dir)
		assert.ErrorContains(t, err, "fewer than")
	})
}
