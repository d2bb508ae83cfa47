package sysview

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/custos-dev/custos/sandbox/mount"
)

// The /etc directories the sandbox binds (ssl, pki, …) can hold what only
// their owner may read: /etc/ssl/private's keys are root's. Inside the
// sandbox the command's uid maps to the worker's, so a worker running as
// root would hand the command those files. Everything below a bound /etc
// directory that others may not read is therefore covered: a directory by
// an empty read-only one, a file by an empty read-only file. Programs
// need only the world-readable part (certificates, not keys).

// etcPrivateDepth bounds the search below each bound /etc directory.
const etcPrivateDepth = 4

// privateEtcMasks are the masks over what ms's /etc directories hold that
// is not readable by others.
func privateEtcMasks(ms []mount.Mount) []mount.Mount {
	var out []mount.Mount
	for _, m := range ms {
		if m.Kind != mount.ROBind || !strings.HasPrefix(m.Dst, "/etc/") {
			continue
		}
		fi, err := os.Stat(m.Src)
		if err != nil || !fi.IsDir() {
			continue
		}
		base := strings.Count(m.Src, "/")
		_ = filepath.WalkDir(m.Src, func(p string, d fs.DirEntry, err error) error {
			if err != nil || p == m.Src || d.Type()&fs.ModeSymlink != 0 {
				return nil
			}
			info, err := d.Info()
			if err != nil {
				return nil
			}
			dst := m.Dst + strings.TrimPrefix(p, m.Src)
			private := info.Mode().Perm()&0o004 == 0
			switch {
			case d.IsDir() && private:
				out = append(out, mount.Mount{Kind: mount.Empty, Dst: dst})
				return fs.SkipDir
			case d.IsDir() && strings.Count(p, "/")-base >= etcPrivateDepth:
				return fs.SkipDir
			case private:
				out = append(out, mount.Mount{Kind: mount.ROBind, Src: os.DevNull, Dst: dst})
			}
			return nil
		})
	}
	return out
}
