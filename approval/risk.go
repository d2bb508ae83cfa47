package approval

import (
	"encoding/json"

	"github.com/custos-dev/custos/approval/programs"
	"github.com/custos-dev/custos/approval/shell"
)

// Risk is what a tool call could do, for the model and for people.
type Risk string

// Risk classes.
const (
	RiskRead    Risk = "read"
	RiskWrite   Risk = "write"
	RiskExec    Risk = "exec"
	RiskNetwork Risk = "network"
)

// networkCommands reach other machines whatever their arguments.
var networkCommands = map[string]bool{
	"curl": true, "wget": true, "ssh": true, "scp": true, "sftp": true, "rsync": true, "nc": true, "ncat": true,
	"netcat": true, "telnet": true, "ftp": true, "socat": true, "ping": true, "dig": true, "nslookup": true, "host": true,
	"http": true, "https": true, "aria2c": true,
}

// networkSubcommands are tools whose named subcommands reach the network.
var networkSubcommands = map[string]map[string]bool{
	"git":    {"clone": true, "fetch": true, "pull": true, "push": true, "ls-remote": true, "submodule": true},
	"npm":    {"install": true, "i": true, "ci": true, "publish": true, "update": true},
	"pip":    {"install": true, "download": true},
	"pip3":   {"install": true, "download": true},
	"go":     {"get": true, "install": true, "mod": true},
	"cargo":  {"install": true, "fetch": true, "publish": true},
	"docker": {"pull": true, "push": true, "login": true},
}

// ClassifyRisk names the risk class of a call: read for the read-only tools,
// write for Write and Edit, network for a Bash command that reaches other
// machines (as far as the parsed command shows), exec for any other command.
func ClassifyRisk(c Call, env Env) Risk {
	switch c.Tool {
	case "Read", "Glob", "Grep", "LSP":
		return RiskRead
	case "Write", "Edit":
		return RiskWrite
	case "Bash":
		var in struct {
			Command string `json:"command"`
		}
		if json.Unmarshal(c.Input, &in) != nil {
			return RiskExec
		}
		a := shell.Analyze(in.Command, env.shell())
		for _, cmd := range a.Commands {
			if networkCommands[cmd.Name] {
				return RiskNetwork
			}
			if subs := networkSubcommands[cmd.Name]; subs != nil && len(cmd.Positionals) > 0 && subs[cmd.Positionals[0]] {
				return RiskNetwork
			}
		}
		for _, f := range a.Files {
			if f.Kind == programs.AccessConnect {
				return RiskNetwork
			}
		}
	}
	return RiskExec
}
