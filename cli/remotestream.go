package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/custos-dev/custos/app"
	"github.com/custos-dev/custos/devserver"
	"github.com/custos-dev/custos/stream"
)

// A job whose worker runs in another process on this machine (go run
// ./worker, with its embedded server) streams its answers to the approval
// inbox on the server's Web UI address. When this command reaches that
// server as its owner (its client certificate is in the server's TLS
// directory, which also names the Web UI's address), it signs in there the
// way `starter inbox-url` does and relays the job's stream into a hub of
// its own, so follow, watch and say print the answer as it is written.

// remoteStreamDir is the TLS directory of the embedded server this command
// talks to as its owner, "" when it talks to another server.
func remoteStreamDir() string {
	if cert := os.Getenv("TEMPORAL_TLS_CLIENT_CERT_PATH"); cert != "" {
		return filepath.Dir(cert)
	}
	if os.Getenv("TEMPORAL_ADDRESS") != "" {
		return ""
	}
	dir, err := devserver.DefaultTLSDir()
	if err != nil {
		return ""
	}
	return dir
}

// remoteHub relays job id's answers from the inbox of the embedded server
// whose TLS directory is dir; nil when there is none to reach (no Web UI,
// not this user's server): the job's events still show each answer.
func remoteHub(ctx context.Context, dir, id string) *stream.Hub {
	if dir == "" {
		return nil
	}
	if _, err := os.Stat(filepath.Join(dir, "ui-address")); errors.Is(err, fs.ErrNotExist) || err != nil {
		return nil
	}
	login, err := devserver.MintLoginURLAt(dir, app.InboxPrefix+"jobs/"+url.PathEscape(id)+"/stream")
	if err != nil {
		return nil
	}
	jar, err := cookiejar.New(nil)
	if err != nil {
		return nil
	}
	// No overall timeout: the stream lasts as long as follow does.
	hc := &http.Client{Jar: jar, Transport: &http.Transport{ResponseHeaderTimeout: 5 * time.Second}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, login, nil)
	if err != nil {
		return nil
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		resp.Body.Close()
		return nil
	}
	hub := stream.NewHub(stream.Limits{})
	go func() {
		defer resp.Body.Close()
		relay(bufio.NewScanner(resp.Body), hub, id)
	}()
	return hub
}

// relay publishes the server-sent chunks into hub, as the model activity
// publishes them into its own.
func relay(sc *bufio.Scanner, hub *stream.Hub, id string) {
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	var w *stream.Writer
	open := [2]int{}
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var c stream.Chunk
		if json.Unmarshal([]byte(line), &c) != nil || c.Job != id {
			continue
		}
		// A snapshot (the text so far, first to a new subscriber) opens the
		// answer like its first delta; a restart or another attempt ends
		// the open one, which was cut off.
		if key := [2]int{c.Turn, c.Attempt}; w == nil || key != open || c.Restart {
			if w != nil {
				w.End(true)
			}
			w, open = hub.Begin(id, c.Turn, c.Attempt), key
		}
		w.Write(c.Text)
		if c.Done {
			w.End(c.Failed)
			w = nil
		}
	}
}
