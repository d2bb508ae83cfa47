package display

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"
)

// maxKey bounds a field name as Input shows it.
const maxKey = 200

// Input renders a tool call's input, whole, for a person who asked to see
// it: one "key: value" line per field, sorted by name, and then each
// string field that spans lines as a block of "  │ " lines. Every name and
// value is escaped as by Escape; other values are shown as compact JSON
// (strings in them JSON-quoted, then escaped). Anything that is not a JSON
// object is shown as indented JSON, escaped. Nothing is shortened: this is
// the full text the shorter renderings point to.
func Input(raw json.RawMessage) string {
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		var b bytes.Buffer
		if json.Indent(&b, raw, "", "  ") != nil {
			return Escape(string(raw))
		}
		return Escape(strings.TrimSpace(b.String()))
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var short, long strings.Builder
	for _, k := range keys {
		name := Line(k, maxKey)
		switch v := obj[k].(type) {
		case string:
			if strings.Contains(v, "\n") {
				long.WriteString(name + ":\n")
				for _, l := range strings.Split(strings.TrimSuffix(v, "\n"), "\n") {
					long.WriteString("  │ " + Escape(l) + "\n")
				}
				continue
			}
			short.WriteString(name + ": " + Line(v, 0) + "\n")
		default:
			short.WriteString(name + ": " + Line(compactJSON(v), 0) + "\n")
		}
	}
	return strings.TrimSuffix(short.String()+long.String(), "\n")
}

// compactJSON is v as JSON on one line, without HTML escaping.
func compactJSON(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return strings.TrimSuffix(b.String(), "\n")
}
