package programs

import (
	"sort"
	"strings"
)

// The commands whose flags may be permuted and combined freely, so that
// rules and commands compare equal however the flags are spelled.

// Flags reads the words after a command's name when its flags may be
// permuted and combined freely (rm, chmod, cp …): the sorted set of flags,
// de-aliased ("-rf", "-r -f" and "--recursive --force" are all f and r;
// a flag's value follows "="), and the other words. ok is false for the
// other commands.
func Flags(name string, args []string) (flags, positionals []string, ok bool) {
	spec, ok := flagTable[name]
	if !ok {
		return nil, nil, false
	}
	set := map[string]bool{}
	endOfFlags := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case endOfFlags || a == "-" || !strings.HasPrefix(a, "-"):
			positionals = append(positionals, a)
		case a == "--":
			endOfFlags = true
		case strings.HasPrefix(a, "--"):
			k, v, hasV := strings.Cut(a[2:], "=")
			if alias, ok := spec.aliases[k]; ok {
				k = alias
			}
			if hasV {
				k += "=" + v
			} else if spec.longValue[k] && i+1 < len(args) {
				i++
				k += "=" + args[i]
			}
			set[k] = true
		default:
			cluster := a[1:]
			for j := 0; j < len(cluster); j++ {
				f := string(cluster[j])
				if alias, ok := spec.aliases[f]; ok {
					f = alias
				}
				if spec.shortValue[cluster[j]] {
					v := cluster[j+1:]
					if v == "" && i+1 < len(args) {
						i++
						v = args[i]
					}
					set[f+"="+v] = true
					break
				}
				set[f] = true
			}
		}
	}
	//workflowcheck:ignore the flags are sorted below
	for f := range set {
		flags = append(flags, f)
	}
	sort.Strings(flags)
	return flags, positionals, true
}

// flagSpec describes how a command's flags normalise.
type flagSpec struct {
	aliases    map[string]string // long or short spelling → canonical name
	shortValue map[byte]bool     // short flags that take a value
	longValue  map[string]bool   // canonical long flags that take a value
}

// flagTable lists the commands whose flags may be permuted and combined freely
// (GNU-style), so "-rf", "-fr", "-r -f" and "--recursive --force" compare equal.
var flagTable = map[string]flagSpec{
	"rm": {aliases: map[string]string{"R": "r", "recursive": "r", "force": "f", "dir": "d",
		"verbose": "v", "interactive": "i"}},
	"rmdir": {aliases: map[string]string{"parents": "p", "verbose": "v"}},
	"chmod": {aliases: map[string]string{"recursive": "R", "verbose": "v", "changes": "c",
		"silent": "f", "quiet": "f"}},
	"chown": {aliases: map[string]string{"recursive": "R", "verbose": "v", "changes": "c",
		"silent": "f", "quiet": "f", "no-dereference": "h", "dereference": "L"}},
	"chgrp": {aliases: map[string]string{"recursive": "R", "verbose": "v", "changes": "c",
		"silent": "f", "quiet": "f", "no-dereference": "h"}},
	"cp": {aliases: map[string]string{"R": "r", "recursive": "r", "force": "f", "archive": "a",
		"interactive": "i", "verbose": "v", "no-clobber": "n", "update": "u", "link": "l",
		"symbolic-link": "s", "target-directory": "t", "suffix": "S", "preserve": "p"},
		shortValue: map[byte]bool{'t': true, 'S': true}, longValue: map[string]bool{"t": true, "S": true}},
	"mv": {aliases: map[string]string{"force": "f", "interactive": "i", "verbose": "v",
		"no-clobber": "n", "update": "u", "target-directory": "t", "suffix": "S"},
		shortValue: map[byte]bool{'t': true, 'S': true}, longValue: map[string]bool{"t": true, "S": true}},
	"ln": {aliases: map[string]string{"symbolic": "s", "force": "f", "verbose": "v",
		"no-dereference": "n", "target-directory": "t", "suffix": "S"},
		shortValue: map[byte]bool{'t': true, 'S': true}, longValue: map[string]bool{"t": true, "S": true}},
	"mkdir": {aliases: map[string]string{"parents": "p", "verbose": "v", "mode": "m"},
		shortValue: map[byte]bool{'m': true}, longValue: map[string]bool{"m": true}},
	"shred": {aliases: map[string]string{"remove": "u", "force": "f", "zero": "z", "verbose": "v",
		"iterations": "n"}, shortValue: map[byte]bool{'n': true}, longValue: map[string]bool{"n": true}},
}
