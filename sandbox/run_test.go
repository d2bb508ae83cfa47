package sandbox

import (
	"io"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// closeWriters closes only the worker's write ends (a reader then sees
// EOF), closeReaders only the read ends, and close leaves nothing open;
// closing again does nothing.
func TestOutputPipes(t *testing.T) {
	p, err := openOutputPipes()
	require.NoError(t, err)
	outR, outW, errR, errW := p.outR, p.outW, p.errR, p.errW
	_, err = outW.Write([]byte("out"))
	require.NoError(t, err)

	p.closeWriters()
	assert.ErrorIs(t, outW.Close(), os.ErrClosed)
	assert.ErrorIs(t, errW.Close(), os.ErrClosed)
	b, err := io.ReadAll(outR)
	require.NoError(t, err)
	assert.Equal(t, "out", string(b))

	p.closeReaders()
	assert.ErrorIs(t, outR.Close(), os.ErrClosed)
	assert.ErrorIs(t, errR.Close(), os.ErrClosed)
	p.close()
	p.closeReaders()
	assert.Equal(t, &outputPipes{}, p)
}

// A writer that outlives the command (a process that escaped the kill,
// here a duplicate of the write end) does not hang drain: after its short
// wait it closes the read ends, which ends the readers.
func TestDrainClosesReadEndsOfAnEscapedWriter(t *testing.T) {
	p, err := openOutputPipes()
	require.NoError(t, err)
	defer p.close()
	fd, err := syscall.Dup(int(p.outW.Fd()))
	require.NoError(t, err)
	escaped := os.NewFile(uintptr(fd), "escaped")
	defer escaped.Close()
	out := newOutputs(Config{MaxOutput: 100, OutputKillBytes: 1000}, Request{})
	readers := out.read(p)
	p.closeWriters()
	_, err = escaped.Write([]byte("still here"))
	require.NoError(t, err)

	start := time.Now()
	done := make(chan struct{})
	go func() { drain(readers, p); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("drain hangs while a writer is left")
	}
	assert.GreaterOrEqual(t, time.Since(start), 2*time.Second, "drain waits for the writers first")
	assert.Nil(t, p.outR)
	assert.Nil(t, p.errR)
	got, _ := out.stdout.result()
	assert.Equal(t, "still here", got)
}
