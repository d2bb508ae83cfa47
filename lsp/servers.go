package lsp

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// Language is the language whose server answers about path, by its
// extension ("" for a file no server is known for). JavaScript goes to
// the TypeScript server, which serves both.
func Language(path string) string {
	switch LanguageID(path) {
	case "go":
		return "go"
	case "typescript", "typescriptreact", "javascript", "javascriptreact":
		return "typescript"
	case "python":
		return "python"
	}
	return ""
}

// candidates are the default servers per language, in order of
// preference; the first one installed is used.
var candidates = map[string][][]string{
	"go":         {{"gopls"}},
	"typescript": {{"typescript-language-server", "--stdio"}},
	"python":     {{"pyright-langserver", "--stdio"}, {"pylsp"}},
}

var (
	defaultsOnce sync.Once
	defaults     map[string][]string
)

// Defaults are the servers installed on this host for the languages custos
// knows, found once: in the system's directories first (/usr/local/bin,
// /usr/bin), which custos' sandbox shows and where make deps installs
// gopls as root; then on PATH, and where go install puts it ($GOBIN,
// $GOPATH/bin, ~/go/bin), which only a server run on the host can use:
// the sandbox refuses it, saying so.
func Defaults() map[string][]string {
	defaultsOnce.Do(func() {
		defaults = map[string][]string{}
		for lang, cs := range candidates {
			for _, c := range cs {
				if p := findProgram(c[0]); p != "" {
					defaults[lang] = append([]string{p}, c[1:]...)
					break
				}
			}
		}
	})
	return defaults
}

// findProgram is the absolute path of name, "" when it is not installed.
func findProgram(name string) string {
	for _, d := range systemDirs {
		if p := filepath.Join(d, name); isExecutable(p) {
			return p
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		if abs, err := filepath.Abs(p); err == nil {
			return abs
		}
	}
	for _, d := range goBinDirs() {
		if p := filepath.Join(d, name); isExecutable(p) {
			return p
		}
	}
	return ""
}

// goBinDirs are where go install puts programs: $GOBIN, each
// $GOPATH/bin, ~/go/bin.
func goBinDirs() []string {
	var dirs []string
	if d := os.Getenv("GOBIN"); filepath.IsAbs(d) {
		dirs = append(dirs, d)
	}
	for _, gp := range filepath.SplitList(os.Getenv("GOPATH")) {
		if filepath.IsAbs(gp) {
			dirs = append(dirs, filepath.Join(gp, "bin"))
		}
	}
	if home, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(home, "go", "bin"))
	}
	return dirs
}

// GoInstalled reports whether prog is in a directory go install puts
// programs in (goBinDirs), or below the home directory.
func GoInstalled(prog string) bool {
	dirs := goBinDirs()
	if home, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, home)
	}
	for _, d := range dirs {
		if rel, err := filepath.Rel(d, prog); err == nil && filepath.IsLocal(rel) {
			return true
		}
	}
	return false
}

// systemDirs are where a server installed for the whole system is.
var systemDirs = []string{"/usr/local/bin", "/usr/bin", "/bin"}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// Command is the server for lang: the settings' command when they name
// one (an empty list turns the language off), else the default.
func Command(settings map[string][]string, lang string) ([]string, bool) {
	if argv, ok := settings[lang]; ok {
		return argv, len(argv) > 0 && strings.TrimSpace(argv[0]) != ""
	}
	argv, ok := Defaults()[lang]
	return argv, ok
}
