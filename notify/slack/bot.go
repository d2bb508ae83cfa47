package slack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"
	"go.temporal.io/sdk/client"
)

// Paths of the HTTP endpoint.
const (
	InteractivityPath = "/slack/interactivity"
	CommandsPath      = "/slack/commands"
	// EventsPath receives the Events API's message events: replies in a
	// job's thread.
	EventsPath = "/slack/events"
)

// answerTimeout bounds the work behind one click: the Update (which waits
// for the job to apply the answer) and the reply.
const answerTimeout = time.Minute

// Bot is the inbound side: it receives clicks and slash commands, checks
// who sent them and answers the job through Temporal.
type Bot struct {
	cfg       Config
	api       *slack.Client
	temporal  client.Client
	approvers *approverCheck
	logger    *slog.Logger
	// replies posts to response_url.
	replies *http.Client

	// threads finds the job whose thread a reply is in.
	threads *threads
	botMu   sync.Mutex
	botID   string // the bot's user ID, once known

	ctx    context.Context // cancelled by Close; the work behind each request runs on it
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// NewAPI builds the Web API client of a configuration.
func NewAPI(cfg Config) *slack.Client {
	opts := []slack.Option{slack.OptionAPIURL(cfg.APIURL), slack.OptionHTTPClient(&http.Client{Timeout: 15 * time.Second})}
	if cfg.AppToken != "" {
		opts = append(opts, slack.OptionAppLevelToken(cfg.AppToken))
	}
	return slack.New(cfg.BotToken, opts...)
}

// NewBot builds the inbound side on api; c sends the Updates.
func NewBot(cfg Config, api *slack.Client, c client.Client, logger *slog.Logger) *Bot {
	if logger == nil {
		logger = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Bot{cfg: cfg, api: api, temporal: c, approvers: newApproverCheck(cfg.Approvers, api), logger: logger,
		replies: &http.Client{Timeout: 15 * time.Second}, threads: newThreads(api, cfg.Channel), ctx: ctx, cancel: cancel}
}

// Handler serves the interactivity and slash-command endpoints.
func (b *Bot) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+InteractivityPath, b.serveInteractivity)
	mux.HandleFunc("POST "+CommandsPath, b.serveCommand)
	mux.HandleFunc("POST "+EventsPath, b.serveEvents)
	return mux
}

// Listen serves the HTTP endpoint on cfg.Addr until Close; it returns the
// address it listens on (useful with port 0).
func (b *Bot) Listen() (string, error) {
	ln, err := net.Listen("tcp", b.cfg.Addr)
	if err != nil {
		return "", fmt.Errorf("slack endpoint: listen on %s (%s): %w", b.cfg.Addr, EnvAddr, err)
	}
	srv := &http.Server{Handler: b.Handler(), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second}
	b.wg.Add(2)
	go func() {
		defer b.wg.Done()
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			b.logger.Error("slack endpoint stopped", "err", err)
		}
	}()
	go func() {
		defer b.wg.Done()
		<-b.ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	return ln.Addr().String(), nil
}

// RunSocketMode receives interactions and slash commands over Socket Mode
// (an outbound WebSocket authenticated by the app token: no public URL and
// no request signatures) until Close.
func (b *Bot) RunSocketMode() {
	sm := socketmode.New(b.api)
	b.wg.Add(2)
	go func() {
		defer b.wg.Done()
		if err := sm.RunContext(b.ctx); err != nil && b.ctx.Err() == nil {
			b.logger.Error("slack socket mode stopped", "err", err)
		}
	}()
	go func() {
		defer b.wg.Done()
		for {
			select {
			case <-b.ctx.Done():
				return
			case evt := <-sm.Events:
				switch evt.Type {
				case socketmode.EventTypeInteractive:
					cb, ok := evt.Data.(slack.InteractionCallback)
					if ok && evt.Request != nil {
						_ = sm.Ack(*evt.Request)
						b.async(func(ctx context.Context) { b.interaction(ctx, cb) })
					}
				case socketmode.EventTypeSlashCommand:
					cmd, ok := evt.Data.(slack.SlashCommand)
					if ok && evt.Request != nil {
						_ = sm.Ack(*evt.Request)
						b.async(func(ctx context.Context) { b.command(ctx, cmd) })
					}
				case socketmode.EventTypeEventsAPI:
					ev, ok := evt.Data.(slackevents.EventsAPIEvent)
					if ok && evt.Request != nil {
						_ = sm.Ack(*evt.Request)
						b.event(ev)
					}
				case socketmode.EventTypeInvalidAuth:
					b.logger.Error("slack socket mode: Slack refused the app token (SLACK_APP_TOKEN)")
				case socketmode.EventTypeConnected:
					b.logger.Info("slack socket mode connected")
				}
			}
		}
	}()
}

// Close stops the endpoint and waits for the work in flight.
func (b *Bot) Close() {
	b.cancel()
	b.wg.Wait()
}

// serveInteractivity verifies the request, answers 200 at once (Slack
// wants an answer within 3 seconds) and does the work afterwards.
func (b *Bot) serveInteractivity(w http.ResponseWriter, r *http.Request) {
	body, ok := b.verified(w, r)
	if !ok {
		return
	}
	form, err := url.ParseQuery(string(body))
	var cb slack.InteractionCallback
	if err == nil {
		err = cb.UnmarshalJSON([]byte(form.Get("payload")))
	}
	if err != nil {
		http.Error(w, "malformed interaction payload", http.StatusBadRequest)
		return
	}
	w.WriteHeader(http.StatusOK)
	b.async(func(ctx context.Context) { b.interaction(ctx, cb) })
}

func (b *Bot) serveCommand(w http.ResponseWriter, r *http.Request) {
	body, ok := b.verified(w, r)
	if !ok {
		return
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		http.Error(w, "malformed slash command", http.StatusBadRequest)
		return
	}
	cmd := slack.SlashCommand{Command: form.Get("command"), Text: form.Get("text"), UserID: form.Get("user_id"),
		UserName: form.Get("user_name"), ChannelID: form.Get("channel_id"), ResponseURL: form.Get("response_url"),
		TriggerID: form.Get("trigger_id"), TeamID: form.Get("team_id")}
	w.WriteHeader(http.StatusOK)
	b.async(func(ctx context.Context) { b.command(ctx, cmd) })
}

// serveEvents answers Slack's URL check and hands message events on,
// answering 200 at once (Slack sends an event again when it waits more
// than 3 seconds).
func (b *Bot) serveEvents(w http.ResponseWriter, r *http.Request) {
	body, ok := b.verified(w, r)
	if !ok {
		return
	}
	ev, err := slackevents.ParseEvent(json.RawMessage(body), slackevents.OptionNoVerifyToken())
	if err != nil {
		http.Error(w, "malformed event", http.StatusBadRequest)
		return
	}
	if ev.Type == slackevents.URLVerification {
		var c slackevents.ChallengeResponse
		if err := json.Unmarshal(body, &c); err != nil {
			http.Error(w, "malformed url_verification", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, c.Challenge)
		return
	}
	w.WriteHeader(http.StatusOK)
	b.event(ev)
}

// verified reads and verifies the body, answering 401 when it fails.
func (b *Bot) verified(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body, err := verifyRequest(r, b.cfg.SigningSecret)
	if err != nil {
		b.logger.Warn("slack request refused", "path", r.URL.Path, "remote", r.RemoteAddr, "err", err)
		http.Error(w, "request not verified", http.StatusUnauthorized)
		return nil, false
	}
	return body, true
}

// async runs fn after the request has been answered, bounded in time and
// stopped by Close.
func (b *Bot) async(fn func(ctx context.Context)) {
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		ctx, cancel := context.WithTimeout(b.ctx, answerTimeout)
		defer cancel()
		fn(ctx)
	}()
}

// reply tells the person, privately (an ephemeral message through the
// request's response_url), what became of their request.
func (b *Bot) reply(ctx context.Context, responseURL, text string) {
	if responseURL == "" {
		return
	}
	// Escaped: the text quotes job data (paths, commands) that must not
	// mention anyone or turn into links.
	msg := &slack.WebhookMessage{Text: escape(text), ResponseType: slack.ResponseTypeEphemeral, ReplaceOriginal: false}
	if err := slack.PostWebhookCustomHTTPContext(ctx, responseURL, b.replies, msg); err != nil {
		b.logger.Warn("slack reply failed", "err", err)
	}
}
