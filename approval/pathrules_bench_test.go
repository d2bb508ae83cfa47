package approval

import (
	"fmt"
	"testing"
)

// benchPathRules are 1000 path rules with globstars, the shape whose
// matching pathglob widened (a "**/" may be no directory).
func benchPathRules() Settings {
	var s Settings
	for i := 0; i < 1000; i++ {
		if i%2 == 0 {
			s.Permissions.Deny = append(s.Permissions.Deny, fmt.Sprintf("Read(**/secret%d/**)", i))
		} else {
			s.Permissions.Allow = append(s.Permissions.Allow, fmt.Sprintf("Edit(src/**/gen%d.go)", i))
		}
	}
	return s
}

func BenchmarkEvaluatePath1000Rules(b *testing.B) {
	p, err := Compile(benchPathRules(), testEnv)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		call Call
	}{
		{"Read", fileCall("Read", "src/a/b/c.go")},
		{"Edit", fileCall("Edit", "src/a/b/c.go")},
		{"Bash glob", bashCall("cat src/*/*.go")},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p.Evaluate(c.call, ModeDefault)
			}
		})
	}
}

func BenchmarkCompilePath1000Rules(b *testing.B) {
	s := benchPathRules()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compile(s, testEnv); err != nil {
			b.Fatal(err)
		}
	}
}
