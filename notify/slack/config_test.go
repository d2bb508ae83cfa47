package slack

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestConfigFromEnv(t *testing.T) {
	base := map[string]string{EnvBotToken: "xoxb-1", EnvSigningSecret: "s", EnvChannel: "C0APPROVALS", EnvApprovers: "U0ALICE,S0LEADS"}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	cases := []struct {
		name    string
		env     map[string]string
		enabled bool
		errHas  string
	}{
		{name: "nothing set: off", env: map[string]string{}},
		{name: "complete", env: base, enabled: true},
		{name: "socket mode needs no signing secret", env: with(EnvSigningSecret, "", EnvAppToken, "xapp-1"), enabled: true},
		{name: "token without secret or app token", env: with(EnvSigningSecret, ""), errHas: EnvSigningSecret},
		{name: "no channel", env: with(EnvChannel, ""), errHas: EnvChannel},
		{name: "channel by name", env: with(EnvChannel, "#approvals"), errHas: "not a channel ID"},
		{name: "bad approver", env: with(EnvApprovers, "alice"), errHas: EnvApprovers},
		{name: "bad app token", env: with(EnvAppToken, "xoxb-2"), errHas: "xapp-"},
		{name: "bad API URL", env: with(EnvAPIURL, "ftp://x/"), errHas: EnvAPIURL},
		{name: "API URL without slash", env: with(EnvAPIURL, "http://127.0.0.1:1/api"), errHas: "slash"},
		{name: "bad listen address", env: with(EnvAddr, "3000"), errHas: EnvAddr},
		{name: "settings without a token", env: map[string]string{EnvChannel: "C1"}, errHas: EnvBotToken},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, enabled, err := ConfigFromEnv(func(k string) string { return tc.env[k] })
			if tc.errHas != "" {
				require.ErrorContains(t, err, tc.errHas)
				assert.False(t, enabled)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.enabled, enabled)
			if enabled {
				assert.Equal(t, DefaultAddr, c.Addr)
				assert.Equal(t, DefaultAPIURL, c.APIURL)
			}
		})
	}
	c, _, err := ConfigFromEnv(func(k string) string { return base[k] })
	require.NoError(t, err)
	assert.Equal(t, Approvers{Users: []string{"U0ALICE"}, Groups: []string{"S0LEADS"}}, c.Approvers)
}
