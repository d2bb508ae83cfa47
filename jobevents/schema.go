package jobevents

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Schema is the JSON Schema (2020-12) of one event line.
//
//go:embed events.schema.json
var Schema []byte

// Validate checks one event line against Schema. It knows the subset of
// JSON Schema the file uses: $ref to $defs, oneOf, type, const, enum,
// properties, required, additionalProperties false and minimum.
func Validate(line []byte) error {
	var schema, v any
	if err := json.Unmarshal(Schema, &schema); err != nil {
		return fmt.Errorf("the event schema: %w", err)
	}
	if err := json.Unmarshal(line, &v); err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	root := schema.(map[string]any)
	return validate(root, root, v, "")
}

func validate(root, s map[string]any, v any, at string) error {
	if ref, ok := s["$ref"].(string); ok {
		name, ok := strings.CutPrefix(ref, "#/$defs/")
		def, found := root["$defs"].(map[string]any)[name].(map[string]any)
		if !ok || !found {
			return fmt.Errorf("%s: unknown $ref %s", at, ref)
		}
		return validate(root, def, v, at)
	}
	if alts, ok := s["oneOf"].([]any); ok {
		return oneOf(root, alts, v, at)
	}
	if c, ok := s["const"]; ok && !equal(c, v) {
		return fmt.Errorf("%s: %v is not %v", at, v, c)
	}
	if e, ok := s["enum"].([]any); ok && !slices.ContainsFunc(e, func(x any) bool { return equal(x, v) }) {
		return fmt.Errorf("%s: %v is not one of %v", at, v, e)
	}
	if t, ok := s["type"].(string); ok && !isType(t, v) {
		return fmt.Errorf("%s: %v is not of type %s", at, v, t)
	}
	if m, ok := s["minimum"].(float64); ok {
		if n, isNum := v.(float64); isNum && n < m {
			return fmt.Errorf("%s: %v is below %v", at, n, m)
		}
	}
	if obj, ok := v.(map[string]any); ok {
		return object(root, s, obj, at)
	}
	return nil
}

func oneOf(root map[string]any, alts []any, v any, at string) error {
	var errs []string
	n := 0
	for _, a := range alts {
		if err := validate(root, a.(map[string]any), v, at); err != nil {
			errs = append(errs, err.Error())
		} else {
			n++
		}
	}
	if n != 1 {
		return fmt.Errorf("%s: matches %d of oneOf's schemas, not one: %s", at, n, strings.Join(errs, "; "))
	}
	return nil
}

func object(root, s, obj map[string]any, at string) error {
	props, _ := s["properties"].(map[string]any)
	for _, r := range asStrings(s["required"]) {
		if _, ok := obj[r]; !ok {
			return fmt.Errorf("%s: %q is required", at, r)
		}
	}
	for k, val := range obj {
		p, ok := props[k].(map[string]any)
		if !ok {
			if s["additionalProperties"] == false {
				return fmt.Errorf("%s: %q is not a property of this event", at, k)
			}
			continue
		}
		if err := validate(root, p, val, at+"/"+k); err != nil {
			return err
		}
	}
	return nil
}

func isType(t string, v any) bool {
	switch t {
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "integer":
		n, ok := v.(float64)
		return ok && n == float64(int64(n))
	case "number":
		_, ok := v.(float64)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "null":
		return v == nil
	}
	return false
}

func equal(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

func asStrings(v any) []string {
	var out []string
	for _, x := range asSlice(v) {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func asSlice(v any) []any { s, _ := v.([]any); return s }
