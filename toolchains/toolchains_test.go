package toolchains

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Every entry has a name of its own and at least one marker, and no marker
// says two toolchains: detection would give a project to both.
func TestTableEntries(t *testing.T) {
	names, markers := map[string]bool{}, map[string]string{}
	for _, tc := range Table {
		assert.NotEmpty(t, tc.Name)
		assert.False(t, names[tc.Name], "%s is in the table twice", tc.Name)
		names[tc.Name] = true
		assert.NotEmpty(t, tc.Markers, tc.Name)
		for _, m := range tc.Markers {
			assert.Empty(t, markers[m], "%s marks both %s and %s", m, markers[m], tc.Name)
			markers[m] = tc.Name
		}
	}
	assert.Equal(t, []string{Go, Node, Python, Rust, Java}, Names())
	assert.True(t, Known("rust"))
	assert.False(t, Known("cobol"))
	assert.False(t, Known(""))
}
