// Package filename holds the one rule by which a job's ID becomes a file
// name: its transcript, its audit and its checkpoints are all named by it, so
// the state directory's collection can tell an open job's files by one name.
package filename

// Safe keeps an ID one path component: every byte but ASCII letters,
// digits, '-', '_' and '.' becomes '_', and a name that would be empty or
// hidden (".", "..", ".x") gets a leading '_'.
func Safe(id string) string {
	b := []byte(id)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			b[i] = '_'
		}
	}
	if len(b) == 0 || b[0] == '.' {
		return "_" + string(b)
	}
	return string(b)
}
