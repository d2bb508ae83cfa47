package app

import (
	"errors"
	"testing"
)

func TestRoute(t *testing.T) {
	hosts := []Host{
		{Name: "alpha", Roots: []string{"/srv/alpha", "/home/shared"}},
		{Name: "beta", Roots: []string{"/srv/beta"}},
		{Name: "deep", Roots: []string{"/srv/alpha/special"}},
	}
	for _, tc := range []struct {
		dir, want string
	}{
		{"/srv/alpha/svc", "alpha"},
		{"/srv/alpha", "alpha"},
		{"/home/shared/x/y", "alpha"},
		{"/srv/beta/app", "beta"},
		{"/srv/alpha/special/repo", "deep"}, // the longest root wins
		{"/srv/alphabet", ""},               // a prefix of the name is not a root
		{"/srv", ""},
		{"/etc", ""},
	} {
		h, err := Route(hosts, tc.dir)
		if tc.want == "" {
			if !errors.Is(err, ErrNoHost) {
				t.Errorf("%s: routed to %q, want no host (err %v)", tc.dir, h.Name, err)
			}
			continue
		}
		if err != nil || h.Name != tc.want {
			t.Errorf("%s: routed to %q (%v), want %s", tc.dir, h.Name, err, tc.want)
		}
	}
	if _, err := Route(nil, "/x"); err == nil || err.Error() != "/x: no live worker holds this workspace; live hosts: none" {
		t.Errorf("no hosts: %v", err)
	}
}
