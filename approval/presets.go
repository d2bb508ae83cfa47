package approval

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"

	"github.com/custos-dev/custos/approval/programs"
	"github.com/custos-dev/custos/approval/shell"
)

// Preset is a system deny rule: it applies to the parsed form of a Bash
// command, is checked before any user rule and cannot be overridden.
// Like Codex execpolicy rules, each carries examples that must and must not
// match; VerifyPresets checks them.
type Preset struct {
	Name        string
	Description string
	// MustMatch and MustNotMatch are Bash command lines, evaluated with
	// PresetExampleEnv.
	MustMatch    []string
	MustNotMatch []string

	// command matches one simple command; analysis the whole analysis.
	command  func(c *shell.SimpleCommand, env Env) bool
	analysis func(a *shell.Analysis, env Env) bool
}

// PresetExampleEnv is the environment preset examples are evaluated in.
var PresetExampleEnv = Env{Workspace: "/home/user/project", Home: "/home/user"}

// Match reports whether the preset denies the analysed command.
func (p *Preset) Match(a *shell.Analysis, env Env) bool {
	if p.analysis != nil && p.analysis(a, env) {
		return true
	}
	if p.command != nil {
		for i := range a.Commands {
			if p.command(&a.Commands[i], env) {
				return true
			}
		}
	}
	return false
}

// Presets returns the system deny rules, in the order they are checked.
func Presets() []Preset { return append([]Preset(nil), presets...) }

var presets = []Preset{
	{
		Name:        "rm-critical",
		Description: "recursive or forced removal of /, a top-level directory, the home directory or the workspace root (or anything above them)",
		MustMatch: []string{
			"rm -rf /", "rm -fr /", "rm -r -f /", "rm --recursive --force /", "rm -R /usr",
			"/bin/rm -r -f /", "sudo rm -rf /", "bash -c 'rm -rf /'", "echo $(rm -rf ~)",
			"env X=1 rm --recursive --force /home/../", "r''m -rf /", "\"rm\" -rf /etc/",
			"rm -rf /*", "rm -rf ~", "rm -rf $HOME", "rm -rf ${HOME}/", "rm -rf /home/user/project",
			"rm -rf .", "rm -rf ..", "rm -rf *", "cd /tmp && rm -rf //", "rm -rf -- /", "rm -f /etc",
			"timeout 5 nice -n 10 rm -rf /var", "xargs rm -rf /", "find / -delete",
			"rm -rf /{usr,tmp}", "rm -rf /home/user/", "rm --no-preserve-root -r /",
			"sh -c \"bash -c 'rm -rf /'\"", "eval rm -rf /", "a && rm -rf ~/",
		},
		MustNotMatch: []string{
			"rm -rf build", "rm -rf ./node_modules", "rm /tmp/x", "rm -rf /tmp/x",
			"rm -rf ~/project/build", "rm file.txt", "echo rm -rf /", "rm -rf src/*",
			"git rm -rf /", "ls /",
		},
		command: func(c *shell.SimpleCommand, env Env) bool {
			if c.Name != "rm" && c.Name != "shred" {
				return false
			}
			if !hasFlag(c, "r", "f", "no-preserve-root") {
				return false
			}
			for _, p := range c.Positionals {
				if criticalPath(p, env, true) {
					return true
				}
			}
			return false
		},
	},
	{
		Name:        "privilege-escalation",
		Description: "running anything as another user: sudo, su, doas, pkexec, run0",
		MustMatch:   []string{"sudo ls", "sudo -i", "su", "su - root -c id", "doas ls", "pkexec id", "/usr/bin/sudo -u root ls", "env sudo ls", "echo x | sudo tee /etc/x", "bash -c 'sudo id'"},
		MustNotMatch: []string{
			"echo sudo", "ls sudo", "git commit -m sudo", "grep -r su .",
		},
		command: func(c *shell.SimpleCommand, _ Env) bool {
			if shell.Privileged(c.Name) || c.Name == "su" {
				return true
			}
			for _, w := range c.Wrappers {
				if shell.Privileged(w) {
					return true
				}
			}
			return false
		},
	},
	{
		Name:         "mkfs",
		Description:  "making or wiping file systems: mkfs*, mke2fs, mkswap, wipefs",
		MustMatch:    []string{"mkfs /dev/sda1", "mkfs.ext4 /dev/sdb", "/sbin/mkfs.xfs -f /dev/nvme0n1", "wipefs -a /dev/sda", "mke2fs x"},
		MustNotMatch: []string{"echo mkfs", "mkdir fs", "ls mkfs.ext4"},
		command: func(c *shell.SimpleCommand, _ Env) bool {
			return strings.HasPrefix(c.Name, "mkfs") || c.Name == "mke2fs" || c.Name == "mkswap" || c.Name == "wipefs"
		},
	},
	{
		Name:        "dd-device",
		Description: "dd writing to a device (dd of=/dev/…), other than /dev/null and the standard streams",
		MustMatch:   []string{"dd if=/dev/zero of=/dev/sda", "dd of=/dev/nvme0n1 bs=1M", "sudo dd if=x.img of=/dev/disk2", "dd if=/dev/zero of=/dev//sda"},
		MustNotMatch: []string{
			"dd if=/dev/zero of=out.img bs=1M count=1", "dd if=/dev/urandom of=/dev/null count=1", "dd if=x of=/dev/stdout",
		},
		command: func(c *shell.SimpleCommand, _ Env) bool {
			if c.Name != "dd" {
				return false
			}
			for _, a := range c.Args {
				if v, ok := strings.CutPrefix(a, "of="); ok && strings.HasPrefix(path.Clean(v), "/dev/") && !programs.HarmlessDevice(path.Clean(v)) {
					return true
				}
			}
			return false
		},
	},
	{
		Name:        "block-device-write",
		Description: "writing onto a block device by redirection, tee or cp (/dev/sd*, /dev/nvme*, /dev/vd*, /dev/hd*, /dev/xvd*, /dev/mmcblk*, /dev/disk*, /dev/dm-*, /dev/mapper/*, /dev/md*, /dev/loop*)",
		MustMatch: []string{
			"echo x > /dev/sda", "cat img >> /dev/nvme0n1", "cat x >/dev/vdb1", "{ echo x; } > /dev/sdb",
			"echo x | tee /dev/sda", "cp disk.img /dev/mmcblk0", "echo hi &> /dev/xvda", "bash -c 'echo > /dev/hda'",
		},
		MustNotMatch: []string{"echo x > /dev/null", "echo x >&2", "echo x > out.txt", "cat /dev/sda", "echo x 2>/dev/null"},
		analysis: func(a *shell.Analysis, _ Env) bool {
			for _, t := range a.WriteTargets {
				if blockDevice(t) {
					return true
				}
			}
			return false
		},
		command: func(c *shell.SimpleCommand, _ Env) bool {
			switch c.Name {
			case "tee", "cp", "mv", "cat", "install":
			default:
				return false
			}
			if c.Name == "cat" {
				return false // cat only reads its operands
			}
			for _, p := range c.Positionals {
				if blockDevice(p) {
					return true
				}
			}
			return false
		},
	},
	{
		Name:        "chmod-chown-critical",
		Description: "recursive chmod/chown/chgrp of /, a top-level directory or the home directory",
		MustMatch: []string{
			"chmod -R 777 /", "chmod --recursive 777 /etc", "chown -R user /", "chown -R user:user /usr/",
			"sudo chgrp -R staff /home", "chmod -R a+w ~", "chmod -vR 777 /*",
		},
		MustNotMatch: []string{"chmod -R 755 build", "chmod 777 /", "chown user file", "chmod -R u+w .", "chmod +x script.sh"},
		command: func(c *shell.SimpleCommand, env Env) bool {
			if c.Name != "chmod" && c.Name != "chown" && c.Name != "chgrp" {
				return false
			}
			if !hasFlag(c, "R") {
				return false
			}
			for _, p := range c.Positionals {
				if criticalPath(p, env, false) {
					return true
				}
			}
			return false
		},
	},
	{
		Name:        "fork-bomb",
		Description: "a function that calls itself in a pipeline or in the background (:(){ :|:& };: and renamed variants)",
		MustMatch: []string{
			":(){ :|:& };:", "bomb(){ bomb|bomb& };bomb", "f() { f | f & }; f", "function x { x & x; }; x",
			"bash -c ':(){ :|:& };:'",
		},
		MustNotMatch: []string{"f() { echo hi; }; f", "f() { g | h; }; f", "count() { count_lines | wc; }"},
		analysis:     func(a *shell.Analysis, _ Env) bool { return len(a.ForkBombs) > 0 },
	},
	{
		Name:        "shutdown",
		Description: "shutting down or rebooting the machine: shutdown, reboot, halt, poweroff, init 0|6, telinit 0|6, systemctl poweroff|reboot|halt|kexec",
		MustMatch: []string{
			"shutdown -h now", "reboot", "halt", "poweroff", "init 0", "init 6", "telinit 6",
			"systemctl poweroff", "systemctl reboot", "/sbin/shutdown -r now", "systemctl --force reboot",
		},
		MustNotMatch: []string{"echo reboot", "git init", "init 3", "systemctl status nginx", "npm run reboot-test"},
		command: func(c *shell.SimpleCommand, _ Env) bool {
			switch c.Name {
			case "shutdown", "reboot", "halt", "poweroff":
				return true
			case "init", "telinit":
				return len(c.Positionals) > 0 && (c.Positionals[0] == "0" || c.Positionals[0] == "6")
			case "systemctl":
				for _, p := range c.Positionals {
					switch p {
					case "poweroff", "reboot", "halt", "kexec", "soft-reboot":
						return true
					}
				}
			}
			return false
		},
	},
}

func hasFlag(c *shell.SimpleCommand, names ...string) bool {
	for _, f := range c.Flags {
		for _, n := range names {
			if f == n {
				return true
			}
		}
	}
	return false
}

// criticalPath reports whether removing (or recursively changing) p would hit
// /, a top-level directory, the home directory or an ancestor of it, or — when
// withWorkspace — the workspace root or an ancestor of it. Relative paths are
// taken from the workspace, where commands run. A glob is critical when its
// directory is (so /* and ~/* are, src/* is not).
func criticalPath(p string, env Env, withWorkspace bool) bool {
	if p == "" {
		return false
	}
	abs := p
	if !strings.HasPrefix(abs, "/") {
		if env.Workspace == "" {
			return false
		}
		abs = path.Join(env.Workspace, abs)
	}
	abs = path.Clean(abs)
	if hasGlobMeta(abs) {
		// The glob's fixed directory part decides.
		i := strings.IndexAny(abs, "*?[{")
		cut := strings.LastIndexByte(abs[:i], '/')
		dir, last := path.Clean(abs[:cut+1]), abs[cut+1:]
		if isAncestorOrSelf(dir, env.Home) || (withWorkspace && isAncestorOrSelf(dir, env.Workspace)) {
			return true
		}
		// Everything in a top-level directory: /usr/*, /etc/.*
		return strings.Count(dir, "/") == 1 && (last == "*" || last == ".*")
	}
	if abs == "/" || strings.Count(abs, "/") == 1 {
		return true // / or a top-level directory
	}
	if isAncestorOrSelf(abs, env.Home) {
		return true
	}
	return withWorkspace && isAncestorOrSelf(abs, env.Workspace)
}

// isAncestorOrSelf reports whether dir is base or one of its ancestors.
func isAncestorOrSelf(dir, base string) bool {
	if base == "" {
		return false
	}
	base = path.Clean(base)
	return dir == base || dir == "/" || strings.HasPrefix(base, strings.TrimSuffix(dir, "/")+"/")
}

// blockDevicePrefixes are device names of disks and partitions.
var blockDevicePrefixes = []string{"sd", "hd", "vd", "xvd", "nvme", "mmcblk", "disk", "rdisk", "dm-", "mapper/", "md", "loop", "sr", "nbd", "zd", "ubd"}

func blockDevice(p string) bool {
	rest, ok := strings.CutPrefix(path.Clean(p), "/dev/")
	if !ok {
		return false
	}
	rest = strings.TrimPrefix(rest, "disk/by-id/")
	for _, pre := range blockDevicePrefixes {
		if strings.HasPrefix(rest, pre) {
			return true
		}
	}
	return strings.HasPrefix(path.Clean(p), "/dev/disk/")
}

// tablesChecked verifies the system presets and the program table against
// their own examples, once, the first time a policy is compiled; Compile
// refuses to build a policy from broken ones (fail closed). Not when the
// package loads: that cost every process that imports it — every starter
// command, a sandbox exec — some 25 ms of start-up, policy or not.
var tablesChecked = sync.OnceValue(checkTables)

func checkTables() error {
	if err := VerifyPresets(); err != nil {
		return fmt.Errorf("approval: system presets failed verification: %w", err)
	}
	table, err := programs.TableExamples()
	if err == nil {
		err = checkPrograms(table)
	}
	if err != nil {
		return fmt.Errorf("approval: the program table failed verification: %w", err)
	}
	return nil
}

// VerifyPresets checks every preset's examples: each MustMatch must be denied
// by that preset and each MustNotMatch must not be. It never panics.
func VerifyPresets() error {
	var errs []error
	seen := map[string]bool{}
	for i := range presets {
		p := &presets[i]
		if p.Name == "" || seen[p.Name] {
			errs = append(errs, fmt.Errorf("preset %d: missing or duplicate name %q", i, p.Name))
		}
		seen[p.Name] = true
		if len(p.MustMatch) == 0 {
			errs = append(errs, fmt.Errorf("preset %s: no MustMatch examples", p.Name))
		}
		for _, ex := range p.MustMatch {
			if !p.Match(shell.Analyze(ex, PresetExampleEnv.shell()), PresetExampleEnv) {
				errs = append(errs, fmt.Errorf("preset %s: example %q must match but does not", p.Name, ex))
			}
		}
		for _, ex := range p.MustNotMatch {
			if p.Match(shell.Analyze(ex, PresetExampleEnv.shell()), PresetExampleEnv) {
				errs = append(errs, fmt.Errorf("preset %s: example %q must not match but does", p.Name, ex))
			}
		}
	}
	return errors.Join(errs...)
}
