// Package toolchains is the table of the toolchains custos provisions in
// the sandbox: each is one entry, its name as settings (sandbox.toolchains)
// and reports spell it, and the files that say a directory is one of its
// projects. Settings validate names against it; the sandbox detects a
// workspace's toolchains with it and gives each what it needs to build
// offline and warm. It does no I/O.
package toolchains

import "slices"

// The toolchains' names.
const (
	Go     = "go"
	Node   = "node"
	Python = "python"
	Rust   = "rust"
	Java   = "java"
)

// Toolchain is one entry of the table.
type Toolchain struct {
	// Name is how settings and reports spell it.
	Name string
	// Markers are the files (regular files, at a project's root) that say
	// a directory is a project of this toolchain.
	Markers []string
}

// Table is every toolchain custos knows, in report order.
var Table = []Toolchain{
	{Go, []string{"go.mod", "go.work"}},
	{Node, []string{"package.json"}},
	{Python, []string{"pyproject.toml", "setup.py", "setup.cfg", "requirements.txt", "Pipfile"}},
	{Rust, []string{"Cargo.toml"}},
	{Java, []string{"pom.xml", "build.gradle", "build.gradle.kts"}},
}

// Names are the table's names, in its order.
func Names() []string {
	out := make([]string, len(Table))
	for i, t := range Table {
		out[i] = t.Name
	}
	return out
}

// Known reports whether name is a toolchain of the table.
func Known(name string) bool {
	return slices.ContainsFunc(Table, func(t Toolchain) bool { return t.Name == name })
}
