package approval

import (
	"strings"
	"testing"
	"time"
)

func TestParseRetention(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     RetentionSettings
		err      string
	}{
		{"all", `{"retention": {"jobFiles": "240h", "caches": "48h", "quarantine": "72h", "audits": "8760h", "maxBytes": 1048576}}`,
			RetentionSettings{JobFiles: Duration(240 * time.Hour), Caches: Duration(48 * time.Hour), Quarantine: Duration(72 * time.Hour), Audits: Duration(8760 * time.Hour), MaxBytes: 1 << 20}, ""},
		{"empty", `{"retention": {}}`, RetentionSettings{}, ""},
		{"null", `{"retention": null}`, RetentionSettings{}, ""},
		{"typo", `{"retention": {"jobFile": "24h"}}`, RetentionSettings{}, "unknown field"},
		{"number", `{"retention": {"caches": 86400}}`, RetentionSettings{}, "duration is a string"},
		{"negative", `{"retention": {"audits": "-1h"}}`, RetentionSettings{}, "at least"},
		{"too short", `{"retention": {"jobFiles": "1m"}}`, RetentionSettings{}, "at least"},
		{"negative cap", `{"retention": {"maxBytes": -1}}`, RetentionSettings{}, "negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ParseSettings([]byte(tc.in), "/ws")
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ParseSettings(%s) = %v; want an error with %q", tc.in, err, tc.err)
				}
				return
			}
			if err != nil || s.Retention != tc.want {
				t.Fatalf("ParseSettings(%s) = %+v, %v; want %+v", tc.in, s.Retention, err, tc.want)
			}
		})
	}
}

func TestRetentionDefaultsAndMerge(t *testing.T) {
	d := RetentionSettings{Caches: Duration(time.Hour)}.WithDefaults()
	want := RetentionSettings{JobFiles: Duration(DefaultRetainJobFiles), Caches: Duration(time.Hour), Quarantine: Duration(DefaultRetainQuarantine), Audits: Duration(DefaultRetainAudits)}
	if d != want {
		t.Errorf("WithDefaults = %+v; want %+v", d, want)
	}
	m := MergeSettings(Settings{Retention: RetentionSettings{JobFiles: Duration(2 * time.Hour), MaxBytes: 5}}, Settings{Retention: RetentionSettings{Audits: Duration(3 * time.Hour)}})
	if m.Retention != (RetentionSettings{JobFiles: Duration(2 * time.Hour), Audits: Duration(3 * time.Hour), MaxBytes: 5}) {
		t.Errorf("merged retention = %+v", m.Retention)
	}
}

func TestUserOnlyDropsRetention(t *testing.T) {
	got, dropped := UserOnly(Settings{Retention: RetentionSettings{Audits: Duration(time.Hour)}})
	if got.Retention != (RetentionSettings{}) || len(dropped) != 1 || !strings.Contains(dropped[0], "retention") {
		t.Errorf("UserOnly = %+v, %q; want retention dropped and named", got.Retention, dropped)
	}
}
