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
// knows, found once: on PATH, or for gopls where go install puts it
// ($GOPATH/bin, ~/go/bin), since make deps installs it there.
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
	if p, err := exec.LookPath(name); err == nil {
		if abs, err := filepath.Abs(p); err == nil {
			return abs
		}
	}
	var dirs []string
	for _, gp := range filepath.SplitList(os.Getenv("GOPATH")) {
		dirs = append(dirs, filepath.Join(gp, "bin"))
	}
	if home, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(home, "go", "bin"))
	}
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
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
