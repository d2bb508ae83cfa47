package sandbox

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// procStat reads a process's state (field 3 of /proc/PID/stat: R, S, Z …)
// and start time in clock ticks since boot (field 22), with one read.
func procStat(pid int) (state byte, start string, err error) {
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

// procStart is a process's start time, "" when there is no such process
// or no /proc.
func procStart(pid int) string {
	_, start, _ := procStat(pid)
	return start
}

// exited reports whether pid is gone or a zombie.
func exited(pid int) bool {
	state, _, err := procStat(pid)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
		return true
	}
	return err == nil && isDead(state)
}

// isDead is a zombie's or a dead process's state.
func isDead(state byte) bool { return state == 'Z' || state == 'X' }
