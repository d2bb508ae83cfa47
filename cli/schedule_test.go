package cli

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
)

// A spec is read by Temporal's own parser: the next time it fires is the
// server's; what it cannot read, or what never fires, is a usage error.
func TestScheduleSpecCompile(t *testing.T) {
	now := time.Date(2026, 12, 6, 10, 30, 0, 0, time.UTC)
	spec, next, err := scheduleSpec{cron: "0 3 * * *"}.compile(now)
	require.NoError(t, err)
	assert.Equal(t, []string{"0 3 * * *"}, spec.CronExpressions)
	assert.Equal(t, time.Date(2026, 12, 7, 3, 0, 0, 0, time.UTC), next)

	spec, next, err = scheduleSpec{every: time.Hour}.compile(now)
	require.NoError(t, err)
	assert.Equal(t, []client.ScheduleIntervalSpec{{Every: time.Hour}}, spec.Intervals)
	assert.Equal(t, time.Date(2026, 12, 6, 11, 0, 0, 0, time.UTC), next)

	_, next, err = scheduleSpec{cron: "CRON_TZ=Europe/Paris 0 3 * * MON-FRI"}.compile(now)
	require.NoError(t, err)
	assert.Equal(t, time.Date(2026, 12, 7, 2, 0, 0, 0, time.UTC), next, "3 am in Paris is 2 am UTC in December")

	for _, tc := range []struct {
		spec scheduleSpec
		want string
	}{
		{scheduleSpec{cron: "61 * * * *"}, "Minute is not in range"},
		{scheduleSpec{cron: "* * *"}, "5-7 fields"},
		{scheduleSpec{cron: "TZ=Nowhere/X 0 3 * * *"}, "unknown time zone"},
		{scheduleSpec{cron: "0 3 31 2 *"}, "never fires"},
		{scheduleSpec{}, "exactly one of"},
		{scheduleSpec{cron: "@daily", every: time.Hour}, "exactly one of"},
		{scheduleSpec{every: time.Millisecond}, "at least 1s"},
		{scheduleSpec{every: -time.Hour}, "at least 1s"},
	} {
		_, _, err := tc.spec.compile(now)
		var ue usageError
		require.ErrorAs(t, err, &ue, "%+v", tc.spec)
		assert.Contains(t, err.Error(), tc.want, "%+v", tc.spec)
	}
}

// A name is the schedule's ID and the head of its jobs' IDs: nothing a
// shell, a URL or a file name would read otherwise.
func TestScheduleName(t *testing.T) {
	for _, ok := range []string{"nightly", "deps.weekly", "a_b-c", "N1"} {
		assert.True(t, scheduleName.MatchString(ok), ok)
	}
	for _, bad := range []string{"", "-x", "1st", "a b", "a/b", "a;rm", "ä", "x\n", string(make([]byte, 64))} {
		assert.False(t, scheduleName.MatchString(bad), "%q", bad)
	}
}

// The spec a schedule lists is its cron fields as the server keeps them,
// or its interval.
func TestSpecText(t *testing.T) {
	s := &client.ScheduleSpec{
		Intervals: []client.ScheduleIntervalSpec{{Every: 6 * time.Hour}},
		Calendars: []client.ScheduleCalendarSpec{{
			Second: []client.ScheduleRange{{Start: 0}}, Minute: []client.ScheduleRange{{Start: 0, End: 30, Step: 15}},
			Hour: []client.ScheduleRange{{Start: 3}}, DayOfWeek: []client.ScheduleRange{{Start: 1, End: 5}},
		}},
	}
	assert.Equal(t, "every 6h0m0s; 0 0-30/15 3 * * 1-5", specText(s))
	assert.Equal(t, "", specText(nil))
}
