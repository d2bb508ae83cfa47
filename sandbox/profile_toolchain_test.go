package sandbox

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/custos-dev/custos/sandbox/mount"
	"github.com/custos-dev/custos/sandbox/provision"
)

// TestBwrapArgsToolchainOrder: the toolchain mounts come after /tmp and
// the home (the git identity is bound inside it) and before the
// workspace, so no cache can cover the workspace.
func TestBwrapArgsToolchainOrder(t *testing.T) {
	p := bwrapProfile{Workspace: "/w", TmpSize: 1, Toolchain: []mount.Mount{
		{Kind: mount.Bind, Src: "/state/x/cache", Dst: provision.CacheInside},
		{Kind: mount.ROBind, Src: "/h/go/pkg/mod/cache/download", Dst: "/h/go/pkg/mod/cache/download"},
		{Kind: mount.ROBind, Src: "/state/x/gitconfig", Dst: sbHome + "/.gitconfig"},
		{Kind: mount.ROBind, Src: os.DevNull, Dst: "/h/go/pkg/mod/cache/download/.netrc"},
	}, Command: []string{"true"}}
	a := strings.Join(bwrapArgs(p), " ")
	want := "--bind /state/x/cache /var/cache/custos --ro-bind /h/go/pkg/mod/cache/download /h/go/pkg/mod/cache/download --ro-bind /state/x/gitconfig /tmp/home/.gitconfig --ro-bind /dev/null /h/go/pkg/mod/cache/download/.netrc --bind /w /w"
	assert.Contains(t, a, want)
	assert.Less(t, strings.Index(a, "--dir "+sbHome), strings.Index(a, want))
}
