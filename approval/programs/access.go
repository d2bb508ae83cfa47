package programs

import "strings"

// How a command uses the files it names: the vocabulary the program
// table's entries and the walker's redirections share.

// AccessKind says how a shell command uses a file it names.
type AccessKind uint8

const (
	// AccessRead: the file's contents are read (cat .env, < .env, grep KEY .env).
	AccessRead AccessKind = iota + 1
	// AccessWrite: the file is created, changed, replaced or removed
	// (> x, tee x, cp a x, rm x, touch x).
	AccessWrite
	// AccessReadWrite: both (<> x, sed -i x, mv x y moves x away).
	AccessReadWrite
	// AccessMention: an argument of a command whose use of its arguments
	// custos does not know (git add .env, python x.py .env). Deny and ask
	// rules on such a path send the command to a person.
	AccessMention
	// AccessConnect: a /dev/tcp or /dev/udp redirection, which bash turns
	// into a network connection.
	AccessConnect
)

// Reads reports an access that reads the file's contents.
func (k AccessKind) Reads() bool { return k == AccessRead || k == AccessReadWrite }

// Writes reports an access that changes the file.
func (k AccessKind) Writes() bool { return k == AccessWrite || k == AccessReadWrite }

// role is how a command uses one of its arguments.
type role uint8

const (
	roleNone role = iota
	roleRead
	roleWrite
	roleReadWrite
	roleMention
)

// kind is the access an operand of the role makes.
func (r role) kind() AccessKind {
	switch r {
	case roleRead:
		return AccessRead
	case roleWrite:
		return AccessWrite
	case roleReadWrite:
		return AccessReadWrite
	case roleMention:
		return AccessMention
	}
	return 0
}

// HarmlessRedirect reports the devices a redirection may read or write without
// touching a file: the null and zero devices, the standard streams and file
// descriptors.
func HarmlessRedirect(p string) bool {
	for _, fds := range []string{"/dev/fd/", "/proc/self/fd/"} {
		if n, ok := strings.CutPrefix(p, fds); ok {
			return IsFD(n) // /dev/fd/3/x is a file in a directory open as fd 3
		}
	}
	return HarmlessDevice(p) || p == "/dev/stdin"
}

// HarmlessDevice reports a device that reading or writing harms nothing
// and reveals nothing: /dev/null, the standard streams, a terminal.
func HarmlessDevice(p string) bool {
	switch p {
	case "/dev/null", "/dev/zero", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/full":
		return true
	}
	return strings.HasPrefix(p, "/dev/fd/") || strings.HasPrefix(p, "/dev/pts/")
}

// IsFD reports a word that is a file descriptor number (2>&1, /dev/fd/3).
func IsFD(s string) bool {
	if s == "-" {
		return true
	}
	for _, r := range strings.TrimSuffix(s, "-") {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}
