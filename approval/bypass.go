package approval

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// ErrBypassDisabled is wrapped by every refusal of bypass mode under
// permissions.disableBypassPermissionsMode.
var ErrBypassDisabled = errors.New(`bypass mode is disabled by permissions.disableBypassPermissionsMode ("disable") in your settings`)

// parseDisableBypass reads "disableBypassPermissionsMode": absent or null
// is off, "disable" (Claude Code's one value) is on; anything else is an
// error, so that a file meaning to refuse bypass never silently allows it.
func parseDisableBypass(raw json.RawMessage) (bool, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return false, nil
	}
	var v string
	if err := json.Unmarshal(raw, &v); err != nil || v != "disable" {
		return false, fmt.Errorf(`%w: permissions.disableBypassPermissionsMode: want "disable", not %s`, ErrBadSettings, raw)
	}
	return true, nil
}

// ResolveModeIn is ResolveMode with the settings' defaultMode, refusing
// what CheckMode refuses.
func ResolveModeIn(requested Mode, s Settings) (Mode, error) {
	m, err := ResolveMode(requested, s.Permissions.DefaultMode)
	if err != nil {
		return "", err
	}
	return m, CheckMode(s, m)
}

// CheckMode refuses a mode the settings do not let any job be in: bypass
// under disableBypassPermissionsMode. Every way to choose a mode asks it
// (a job's start and defaultMode, the mode Update and signal, a schedule,
// the ACP agent, a subagent's definition).
func CheckMode(s Settings, m Mode) error {
	if m == ModeBypass && s.Permissions.DisableBypass {
		return ErrBypassDisabled
	}
	return nil
}
