package activities

import (
	"io/fs"
	"sync"
	"syscall"
	"time"

	"github.com/custos-dev/custos/sandbox/hostfs"
	"github.com/custos-dev/custos/sandbox/pathguard"
)

// lspTexts keeps the texts of the files LSP calls read (the file asked
// about, sent to the server, and the files its results show lines from)
// by the files' identity, so a warm call does not read them again: most
// of what the tool added to a server's answer was reading them. The path
// guard and the deny rules still run on every call, before any text is
// looked up; only the read is saved.
var lspTexts = &textCache{texts: map[fileID]string{}}

// maxCachedText bounds the texts kept, all files together.
const maxCachedText = 32 << 20

// fileID is what changes when a file's content may have (hostfs.FileSig):
// a write moves its change time (ctime), which nothing but the clock sets,
// even when the size and the modification time are put back.
type fileID = hostfs.FileSig

// textCache is a set of texts by fileID, dropped all at once when full
// (a job's calls come back to the same few files).
type textCache struct {
	mu    sync.Mutex
	texts map[fileID]string
	bytes int
}

// settled is how long ago a file must have changed for its identity to
// be trusted: a file system stamps times at a clock tick of its own, and
// two writes within one tick, of the same size, would leave the same
// identity (git's "racily clean" files).
const settled = 2 * time.Second

// textClock is the clock settled is measured by (tests move it on).
var textClock = time.Now

// idOf is fi's identity; false when the system does not give one or the
// file changed too recently for it to be trusted.
func idOf(fi fs.FileInfo) (fileID, bool) {
	if _, ok := fi.Sys().(*syscall.Stat_t); !ok {
		return fileID{}, false
	}
	id := hostfs.SigOf(fi)
	if textClock().Sub(time.Unix(0, id.Ctim)) < settled {
		return fileID{}, false
	}
	return id, true
}

// read is the text of the file rel of root, whose Stat was fi: the kept
// one if the file is as it was then, else read. check refuses a text
// (too large, binary) before it is kept.
func (c *textCache) read(root *pathguard.Root, rel string, fi fs.FileInfo, check func([]byte) error) (string, error) {
	id, ok := idOf(fi)
	if ok {
		c.mu.Lock()
		text, hit := c.texts[id]
		c.mu.Unlock()
		if hit {
			return text, nil
		}
	}
	b, err := root.ReadFile(rel)
	if err != nil {
		return "", err
	}
	if err := check(b); err != nil {
		return "", err
	}
	text := string(b)
	// Kept under the identity seen before the read: a write between the
	// two gave the file a new change time, so this one is not seen again.
	if ok && len(text) <= maxCachedText/4 {
		c.mu.Lock()
		if c.bytes+len(text) > maxCachedText {
			c.texts, c.bytes = map[fileID]string{}, 0
		}
		if _, dup := c.texts[id]; !dup {
			c.texts[id] = text
			c.bytes += len(text)
		}
		c.mu.Unlock()
	}
	return text, nil
}
