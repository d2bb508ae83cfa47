package hostfs

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// ProcStat reads a process's state (field 3 of /proc/PID/stat: R, S, Z …)
// and start time in clock ticks since boot (field 22), with one read.
func ProcStat(pid int) (state byte, start string, err error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, "", err
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, "", nil
	}
	f := strings.Fields(s[i+1:])
	if len(f) > 0 {
		state = f[0][0]
	}
	if len(f) >= 20 {
		start = f[19] // field 22, counting from field 3
	}
	return state, start, nil
}

// ProcStart is a process's start time, "" when there is no such process
// or no /proc.
func ProcStart(pid int) string {
	_, start, _ := ProcStat(pid)
	return start
}

// Exited reports whether pid is gone or a zombie.
func Exited(pid int) bool {
	state, _, err := ProcStat(pid)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
		return true
	}
	return err == nil && IsDead(state)
}

// IsDead is a zombie's or a dead process's state.
func IsDead(state byte) bool { return state == 'Z' || state == 'X' }
