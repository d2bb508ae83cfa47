package filename

import "testing"

func TestSafe(t *testing.T) {
	tests := []struct{ id, want string }{
		{"job-1_a.b", "job-1_a.b"},
		{"", "_"},
		{".", "_."},
		{"..", "_.."},
		{".hidden", "_.hidden"},
		{"a/b", "a_b"},
		{"../../etc/passwd", "_.._.._etc_passwd"},
		{"sched-2026-12-06T05:00:00Z", "sched-2026-12-06T05_00_00Z"},
		{"é", "__"},
		{"a\x00b", "a_b"},
	}
	for _, tt := range tests {
		if got := Safe(tt.id); got != tt.want {
			t.Errorf("Safe(%q) = %q, want %q", tt.id, got, tt.want)
		}
	}
}
