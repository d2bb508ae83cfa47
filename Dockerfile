# custos worker image: the worker plus the `custos` CLI (starter), on Debian
# with bubblewrap for the Bash sandbox.
#
#   docker compose up -d            # see docker-compose.yml
#   docker compose exec custos-worker custos run "fix the failing test"
#
# The CLI runs inside the container so the job's workspace path (/workspace)
# is the same path the worker's tools see.

# Go ≥ 1.26.10 is required by go.temporal.io/server and the UI module.
ARG GO_VERSION=1.27.3
# trixie: its bubblewrap (0.11) has --size, which the sandbox uses for its
# bounded /tmp; bookworm's 0.8 does not.
ARG DEBIAN_RELEASE=trixie

FROM golang:${GO_VERSION}-${DEBIAN_RELEASE} AS build
WORKDIR /src
# Modules first, so source edits don't refetch them.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
# CGO on for one C file: the sandbox's mount step (sandbox/mountinit_cgo.go),
# which makes the workspace's mounts inside the sandbox faster than
# bubblewrap can. SQLite is modernc.org/sqlite (pure Go); the binaries link
# glibc only, and the runtime stage is the same Debian release.
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=1 go build -trimpath -ldflags="-s -w" -o /out/custos-worker ./worker && \
    CGO_ENABLED=1 go build -trimpath -ldflags="-s -w" -o /out/custos ./starter

FROM debian:${DEBIAN_RELEASE}-slim
# bubblewrap: OS isolation for every Bash tool call.
# ca-certificates: TLS to the model endpoint (OpenAI or compatible).
# git: what a coding agent's shell commands reach for first.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      bubblewrap ca-certificates git \
 && rm -rf /var/lib/apt/lists/*

# Non-root. bwrap is not setuid on Debian, so it needs unprivileged user
# namespaces: the host kernel must allow them (on Ubuntu ≥ 23.10 also the
# AppArmor userns restriction), and Docker's default seccomp and AppArmor
# profiles and its masked /proc paths must be relaxed for this container —
# docker-compose.yml does that with security_opt. Without them the worker
# logs why and falls back to running commands without OS isolation (or
# refuses to, with -require-sandbox).
RUN useradd --create-home --uid 10001 --user-group custos \
 && mkdir -p /workspace && chown custos:custos /workspace
COPY --from=build /out/custos-worker /out/custos /usr/local/bin/
USER custos
WORKDIR /workspace
ENV XDG_STATE_HOME=/home/custos/.local/state \
    XDG_CONFIG_HOME=/home/custos/.config
ENTRYPOINT ["custos-worker"]
