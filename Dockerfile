# unhold in a container: a static binary (CGO off) on a distroless base,
# run as a user without privileges, its data directory a volume, healthy
# while /readyz answers 200. docs/deploy.md says how to run it and what of
# this was run and what only checked. deploy/compose.yaml runs it beside
# PostgreSQL, Prometheus and Grafana.

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
# .git comes along (see .dockerignore): go build stamps the commit into the
# binary from it; the build time is set as make build sets it. Both show
# in unhold version and on /healthz.
COPY . .
# The same command deploy/binary_test.go runs to build and check the binary.
RUN CGO_ENABLED=0 go build -trimpath -buildvcs=auto -ldflags="-s -w -X main.buildTime=$(date -u +%Y-%m-%dT%H:%M:%SZ)" -o /out/unhold ./cmd/unhold
RUN mkdir /out/data

# distroless/static: CA certificates, time zones and /etc/passwd with the
# nonroot user (65532), no shell and no package manager.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/unhold /unhold
COPY --from=build --chown=65532:65532 /out/data /data
USER 65532:65532
WORKDIR /data
VOLUME /data
# 0.0.0.0 is the container's own network namespace: publish the port on
# the host's loopback (-p 127.0.0.1:8080:8080) and reach it from the
# host's proxy; -public-url names the origin browsers use.
ENV UNHOLD_DB=/data/unhold.db \
    UNHOLD_ADDR=0.0.0.0:8080 \
    UNHOLD_LOG_FORMAT=json
EXPOSE 8080
# There is no curl in the image: unhold itself GETs /readyz (database
# reachable, migrations applied), exit 0 on 200 and 1 otherwise, within 3 s.
# An unhold worker container answers on -metrics-addr instead: override
# with healthcheck -url (deploy/compose.yaml does).
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["/unhold", "healthcheck", "-url", "http://127.0.0.1:8080/readyz"]
# On docker stop, SIGTERM: unhold stops HTTP, then the workers, then the
# periodic jobs, in up to 45 s (docker stop -t 45; compose sets it).
STOPSIGNAL SIGTERM
ENTRYPOINT ["/unhold"]
CMD ["serve"]
