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
	f, err := openRunFiles()
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
