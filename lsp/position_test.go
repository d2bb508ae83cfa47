package lsp

import "testing"

func TestColumnsAreCharactersOnTheLineAndUTF16OnTheWire(t *testing.T) {
	tests := []struct {
		name   string
		line   string
		column int // 1-based, characters
		utf16  int // 0-based, UTF-16 units
	}{
		{"ASCII", "abc", 3, 2},
		{"first column", "abc", 1, 0},
		{"after a two-byte character", "éx", 2, 1},
		{"after a character outside the BMP", "😀x", 2, 2},
		{"after both", "é😀x", 3, 3},
		{"past the end", "ab", 9, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ToUTF16(tt.line, tt.column); got != tt.utf16 {
				t.Errorf("ToUTF16(%q, %d) = %d, want %d", tt.line, tt.column, got, tt.utf16)
			}
			if tt.name == "past the end" {
				return
			}
			if got := FromUTF16(tt.line, tt.utf16); got != tt.column {
				t.Errorf("FromUTF16(%q, %d) = %d, want %d", tt.line, tt.utf16, got, tt.column)
			}
		})
	}
}

func TestConvertRefusesALinePastTheEnd(t *testing.T) {
	tests := []struct {
		name string
		line int
		ok   bool
	}{{"first line", 1, true}, {"last line", 2, true}, {"past the end", 4, false}, {"line zero", 0, false}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, ok := Convert("a\nb\n", tt.line, 1); ok != tt.ok {
				t.Errorf("Convert line %d: ok = %v, want %v", tt.line, ok, tt.ok)
			}
		})
	}
}
