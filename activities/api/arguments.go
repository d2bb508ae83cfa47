package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// schema is the part of a tool's JSON schema the arguments are checked
// against: an object of typed properties, some required, no others.
type schema struct {
	Properties map[string]property `json:"properties"`
	Required   []string            `json:"required"`
	// order lists the properties as the schema writes them, for messages.
	order []string
}

type property struct {
	Type    string   `json:"type"` // string, integer or boolean
	Enum    []string `json:"enum"`
	Minimum *int64   `json:"minimum"`
	Maximum *int64   `json:"maximum"`
}

// schemas are the tools' schemas, parsed once.
var schemas = map[string]schema{}

func init() {
	for tool, src := range map[string]string{ReadActivity: ReadSchema, GlobActivity: GlobSchema, GrepActivity: GrepSchema,
		LSPActivity:   LSPSchema,
		WriteActivity: WriteSchema, EditActivity: EditSchema, BashActivity: BashSchema, TaskTool: TaskSchema} {
		s, err := parseSchema(src)
		if err != nil {
			panic(fmt.Sprintf("api: the %s schema: %v", tool, err))
		}
		schemas[tool] = s
	}
}

// parseSchema reads a schema and the order of its properties.
func parseSchema(src string) (schema, error) {
	var s schema
	if err := json.Unmarshal([]byte(src), &s); err != nil {
		return s, err
	}
	var raw struct {
		Properties json.RawMessage `json:"properties"`
	}
	_ = json.Unmarshal([]byte(src), &raw)
	dec := json.NewDecoder(bytes.NewReader(raw.Properties))
	_, _ = dec.Token() // {
	for dec.More() {
		k, _ := dec.Token()
		s.order = append(s.order, k.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return s, err
		}
	}
	for name, p := range s.Properties {
		switch p.Type {
		case "string", "integer", "boolean":
		default:
			return s, fmt.Errorf("property %q: type %q is not checked", name, p.Type)
		}
	}
	return s, nil
}

// CheckArguments checks a call's arguments against its tool's schema, as
// exactly as the tool decodes them, so that a call the tool would refuse is
// refused before anyone is asked to approve it: the arguments must be one
// JSON object; each field one the schema names, spelled exactly (the tools'
// decoder would also take "COMMAND" for "command", and a second spelling of
// a field would replace the value the policy and the person saw), given
// once, of its type, within its enum and bounds; every required field
// present and not null. null stands for an optional field left out, as the
// tools read it. The error says everything that is wrong, in the order of
// the arguments. It is pure: the workflow runs it.
func CheckArguments(tool string, input json.RawMessage) error {
	s, ok := schemas[tool]
	if !ok {
		return fmt.Errorf("unknown tool %q", tool)
	}
	input = bytes.TrimSpace(input)
	dec := json.NewDecoder(bytes.NewReader(input))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return fmt.Errorf("the arguments must be a JSON object with %s's parameters (%s)", tool, strings.Join(s.order, ", "))
	}
	var problems []string
	seen, null := map[string]bool{}, map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return fmt.Errorf("the arguments are not valid JSON: %v", err)
		}
		name := t.(string)
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return fmt.Errorf("the arguments are not valid JSON: %v", err)
		}
		if seen[name] {
			problems = append(problems, fmt.Sprintf("field %q is given more than once", name))
			continue
		}
		seen[name], null[name] = true, string(value) == "null"
		p, known := s.Properties[name]
		if !known {
			problems = append(problems, s.unknownField(tool, name))
			continue
		}
		if msg := p.check(name, value); msg != "" {
			problems = append(problems, msg)
		}
	}
	if _, err := dec.Token(); err != nil {
		return fmt.Errorf("the arguments are not valid JSON: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("the arguments have data after the JSON object")
	}
	var missing []string
	for _, r := range s.Required {
		if !seen[r] || null[r] {
			missing = append(missing, r)
		}
	}
	if len(missing) > 0 {
		problems = append(problems, fmt.Sprintf("missing required parameter(s): %s", strings.Join(missing, ", ")))
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// unknownField says a field is not one of the tool's, naming the one it
// was perhaps meant to be.
func (s schema) unknownField(tool, name string) string {
	for _, p := range s.order {
		if strings.EqualFold(p, name) {
			return fmt.Sprintf("unknown field %q (field names are case-sensitive: %q)", name, p)
		}
	}
	return fmt.Sprintf("unknown field %q: %s takes %s", name, tool, strings.Join(s.order, ", "))
}

// check is "" when value fits p, or what is wrong with it.
func (p property) check(name string, value json.RawMessage) string {
	if string(value) == "null" {
		return "" // left out; a required one is reported as missing
	}
	switch p.Type {
	case "string":
		var v string
		if json.Unmarshal(value, &v) != nil {
			return fmt.Sprintf("field %q must be a string, got %s", name, kind(value))
		}
		if len(p.Enum) > 0 && !contains(p.Enum, v) {
			return fmt.Sprintf("field %q must be one of %s, got %q", name, strings.Join(quoted(p.Enum), ", "), v)
		}
	case "boolean":
		if string(value) != "true" && string(value) != "false" {
			return fmt.Sprintf("field %q must be true or false, got %s", name, kind(value))
		}
	case "integer":
		// What Go decodes into an int: digits only, no fraction or exponent.
		n, err := strconv.ParseInt(string(value), 10, 64)
		if err != nil {
			if kind(value) == "a number" {
				return fmt.Sprintf("field %q must be a whole number, got %s", name, value)
			}
			return fmt.Sprintf("field %q must be an integer, got %s", name, kind(value))
		}
		if p.Minimum != nil && n < *p.Minimum || p.Maximum != nil && n > *p.Maximum {
			return fmt.Sprintf("field %q must be between %s and %s, got %d", name, bound(p.Minimum, "-∞"), bound(p.Maximum, "∞"), n)
		}
	}
	return ""
}

// kind names the JSON type of value, for messages.
func kind(value json.RawMessage) string {
	switch value[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

func bound(b *int64, none string) string {
	if b == nil {
		return none
	}
	return strconv.FormatInt(*b, 10)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func quoted(list []string) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = strconv.Quote(s)
	}
	return out
}
