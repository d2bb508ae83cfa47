package toolkit

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

type decodeProbe struct {
	Path  string          `json:"file_path"`
	Extra json.RawMessage `json:"extra,omitempty"`
	N     *int            `json:"n,omitempty"`
}

// DecodeInput reads the members of the model's object by their bounds:
// every name compared exactly (escapes decoded first), values with
// strings, braces, brackets and commas inside them skipped whole, null
// taken as absent, and aliases, copies and unknown names refused.
func TestDecodeInputReadsEveryMemberExactly(t *testing.T) {
	ok := map[string]string{
		`{"file_path":"a"}`:                                                    "a",
		" {\n\t\"file_path\" :\r \"a\" , \"n\" : 3 } ":                         "a",
		`{"extra":{"x":"},\"file_path\":","y":[1,{"z":"]"}]},"file_path":"b"}`: "b",
		`{"extra":"{\"file_path\":\"c\"}","file_path":"d"}`:                    "d",
		`{"file_p\u0061th":"e"}`:                                               "e",
		`{"n":null,"file_path":"f","extra":[]}`:                                "f",
	}
	for in, want := range ok {
		var p decodeProbe
		require.NoError(t, DecodeInput(json.RawMessage(in), &p, "file_path"), in)
		require.Equal(t, want, p.Path, in)
	}
	refused := map[string]string{
		`{"file_path":"a","file_p\u0061th":"b"}`:  "given more than once",
		`{"file_path":"a","file_path":"b"}`:       "given more than once",
		`{"FILE_PATH":"a"}`:                       "unknown field",
		`{"file_path":"a","extra":{},"extra ":1}`: "unknown field",
		`{"extra":{"file_path":"a"}}`:             "missing required parameter(s): file_path",
		`{"file_path":null}`:                      "missing required parameter(s): file_path",
		`null`:                                    "missing required parameter(s): file_path",
		`{"file_path":"a"} {}`:                    "not a JSON object",
		`{"file_path":"a",}`:                      "not a JSON object",
		`[{"file_path":"a"}]`:                     "not a JSON object",
		`{"file_path":1}`:                         "invalid arguments",
	}
	for in, want := range refused {
		var p decodeProbe
		err := DecodeInput(json.RawMessage(in), &p, "file_path")
		require.ErrorContains(t, err, want, in)
	}
}
