package devserver

import (
	"context"
	"log/slog"

	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/log/tag"
)

// serverLogger adapts a *slog.Logger to the Temporal server's log.Logger.
//
// The server is chatty at info level (shard movements, membership, namespace
// registry refreshes), none of which helps a custos user, so the adapter has
// its own floor (warn by default) on top of whatever the slog handler filters.
// The floor is a LevelVar so Stop can raise it: the server routinely logs
// warnings while it shuts down that are not actionable.
type serverLogger struct {
	log   *slog.Logger
	floor *slog.LevelVar
}

var (
	_ log.Logger      = serverLogger{}
	_ log.SLogWrapper = serverLogger{}
)

func (l serverLogger) Debug(msg string, tags ...tag.Tag) { l.emit(slog.LevelDebug, msg, tags) }
func (l serverLogger) Info(msg string, tags ...tag.Tag)  { l.emit(slog.LevelInfo, msg, tags) }
func (l serverLogger) Warn(msg string, tags ...tag.Tag)  { l.emit(slog.LevelWarn, msg, tags) }
func (l serverLogger) Error(msg string, tags ...tag.Tag) { l.emit(slog.LevelError, msg, tags) }

// DPanic, Panic and Fatal are logged as errors and never panic or exit: an
// embedded server must not take the host process (the custos worker) down.
func (l serverLogger) DPanic(msg string, tags ...tag.Tag) { l.emit(slog.LevelError, msg, tags) }
func (l serverLogger) Panic(msg string, tags ...tag.Tag)  { l.emit(slog.LevelError, msg, tags) }
func (l serverLogger) Fatal(msg string, tags ...tag.Tag)  { l.emit(slog.LevelError, msg, tags) }

// SLog lets server components that prefer slog use the same destination.
func (l serverLogger) SLog() *slog.Logger { return l.log }

func (l serverLogger) emit(level slog.Level, msg string, tags []tag.Tag) {
	if level < l.floor.Level() {
		return
	}
	ctx := context.Background()
	if !l.log.Enabled(ctx, level) {
		return
	}
	attrs := make([]slog.Attr, len(tags))
	for i, t := range tags {
		attrs[i] = slog.Any(t.Key(), t.Value())
	}
	l.log.LogAttrs(ctx, level, msg, attrs...)
}
