package sandbox

import (
	"io"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Each of the child's files sits where ExtraFiles makes it the fd the
// profile names; closeChild closes exactly the child's files (the status
// reader then sees EOF), close the rest, and closing again does nothing.
func TestRunFiles(t *testing.T) {
	f, err := openRunFiles(bwrapProfile{}, nil)
	require.NoError(t, err)
	defer f.close()
	files := f.child()
	require.Len(t, files, 4)
	read := func(fd int) string {
		b, err := io.ReadAll(files[fd-3])
		require.NoError(t, err)
		return string(b)
	}
	passwd, group := identityFiles()
	prog, err := seccompProgram()
	require.NoError(t, err)
	assert.Equal(t, passwd, read(fdPasswd))
	assert.Equal(t, group, read(fdGroup))
	assert.Equal(t, string(prog), read(fdSeccomp))
	_, err = files[fdStatus-3].Write([]byte(`{"child-pid": 7}`))
	require.NoError(t, err)

	statusR := f.statusR
	f.closeChild()
	for i, c := range files {
		assert.ErrorIs(t, c.Close(), os.ErrClosed, "child file %d", i)
	}
	b, err := io.ReadAll(statusR)
	require.NoError(t, err)
	assert.Equal(t, `{"child-pid": 7}`, string(b))

	f.close()
	assert.ErrorIs(t, statusR.Close(), os.ErrClosed)
	f.close()
}

// With the mount step the child also gets the step's plan (what
// stepMounts makes of the profile), its status pipe and its binary; the
// binary is the worker's, shared by every run, so closing a run's files
// leaves it open.
func TestRunFilesWithTheMountStep(t *testing.T) {
	exe, err := os.Open(os.Args[0])
	require.NoError(t, err)
	defer exe.Close()
	p := bwrapProfile{Step: true, Masks: MaskPlan{Pins: []string{"/w/a"}, Masks: []Mask{{Path: "/w/a/f", Kind: MaskHide}}}, Env: []string{"A=1"}}
	f, err := openRunFiles(p, &mountStep{exe: exe})
	require.NoError(t, err)
	defer f.close()
	files := f.child()
	require.Len(t, files, 7)
	plan, err := io.ReadAll(files[fdStepPlan-3])
	require.NoError(t, err)
	assert.Equal(t, "B/w/a\x00F/w/a/f\x00VA=1\x00", string(plan))
	assert.Same(t, exe, files[fdStepExe-3])
	_, err = files[fdStepStatus-3].Write([]byte("mount over /w/a/f: denied"))
	require.NoError(t, err)
	stepR := f.stepR
	f.closeChild()
	assert.ErrorContains(t, stepFailed(stepR), "mount step failed, the command did not run: mount over /w/a/f: denied")
	f.close()
	_, err = exe.Stat()
	assert.NoError(t, err, "the step's binary stays open")
}
