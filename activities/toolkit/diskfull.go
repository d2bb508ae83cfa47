package toolkit

import (
	"errors"
	"fmt"
	"strings"
	"syscall"

	"go.temporal.io/sdk/temporal"

	"github.com/custos-dev/custos/activities/api"
)

// IsDiskFull reports whether err is a write refused for want of space: the
// file system is full (ENOSPC) or the user is over quota (EDQUOT). Both
// need someone to free space; retrying at once only fails again.
func IsDiskFull(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// DiskFullName is how a tool result and a parked job name the errno.
func DiskFullName(err error) string {
	if errors.Is(err, syscall.EDQUOT) {
		return "EDQUOT, over quota"
	}
	return "ENOSPC"
}

// ClassifyDiskFull turns a save that failed for want of space into a
// non-retryable DiskFull application error, so that the workflow parks the
// job instead of letting the activity's retries spin or the failure pass
// with a log line; other errors are returned as they are.
func ClassifyDiskFull(err error) error {
	if err == nil || !IsDiskFull(err) {
		return err
	}
	msg := fmt.Sprintf("the disk holding custos' state directory is full (%s): %v", DiskFullName(err), err)
	return temporal.NewNonRetryableApplicationError(msg, api.DiskFullErrorType, err)
}

// RecordFailure is what a Write or Edit returns when custos could not
// record its checkpoint: when custos' state directory is full (not the
// workspace, whose write has not been tried) a DiskFull error, which
// parks the call with the job until space is back (workflows/disk.go), so
// the model never hears of custos' own disk; else a tool result saying
// nothing was written.
func RecordFailure(tool string, err error) (api.ToolResult, error) {
	if IsDiskFull(err) {
		return api.ToolResult{}, ClassifyDiskFull(fmt.Errorf("%s: %w", tool, err))
	}
	return ErrorResult("%s: %v; nothing was written", tool, err), nil
}

// WriteFailure is the tool result of a Write or Edit whose file could not
// be written. Both write beside the file and rename (WriteAtomic), so the
// file is as it was whatever failed; a full disk is said plainly, since
// the model cannot fix it by changing its call.
func WriteFailure(tool, path string, err error) api.ToolResult {
	if IsDiskFull(err) {
		return ErrorResult("%s: the disk holding the workspace is full (%s): nothing was written; %s is left as it was. Free some space (or ask the user to) before writing again.",
			tool, DiskFullName(err), path)
	}
	return ErrorResult("%s: %s: %v", tool, path, err)
}

// DiskFullNote is the note of a failed Bash command that ran out of space:
// the workspace's file system has no block left, or the command (or the
// sandbox applying its writes to the workspace) said "no space left on
// device"; a full /tmp counts too. The command's own output
// says what failed; the note tells the model that retrying will not help
// until space is freed. It is "" otherwise.
func DiskFullNote(workspace string, output string) string {
	var st syscall.Statfs_t
	full := syscall.Statfs(workspace, &st) == nil && st.Bavail == 0
	said := strings.ToLower(output)
	if !full && !strings.Contains(said, "no space left on device") && !strings.Contains(said, "disk quota exceeded") {
		return ""
	}
	return "the disk is full (ENOSPC): what the command wrote may be missing or cut short; free some space (or ask the user to) before running it again"
}
