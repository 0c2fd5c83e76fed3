// Package config reads unhold's settings from command-line flags and
// environment variables. A flag wins over its environment variable, which
// wins over the built-in default.
package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"unhold/jobs"
	"unhold/models"
)

// Accepted values of Config.CouponExpiry.
const (
	// CouponExpiryExtend gives a released coupon that has already expired
	// CouponExtendDays more days, so the customer can still use it.
	CouponExpiryExtend = "extend"
	// CouponExpiryKeep returns an expired coupon as EXPIRED.
	CouponExpiryKeep = "keep"
)

// Config.PointsExpiry takes the same two values: extend pushes a points
// account's expiry to at least PointsExtendDays from the release or
// refund that gives points back; keep leaves it, so points that come back
// after their expiry stay unusable.

// Accepted values of Config.LogFormat.
const (
	LogFormatAuto = "auto" // text on a terminal, JSON otherwise
	LogFormatJSON = "json"
	LogFormatText = "text"
)

// Config holds every setting of one unhold process.
type Config struct {
	DB                string        // SQLite file path, or a postgres:// URL
	Addr              string        // HTTP listen address
	WorkerID          string        // lease owner name of this process's worker
	WorkerBatch       int           // tasks claimed per worker round
	CloseGroup        int           // closes that may share one write transaction; 1: each its own
	PGWriters         int           // write transactions run at once on PostgreSQL
	Pools             int           // worker loops in this process, each with its own lease owner name
	LeaseDuration     time.Duration // how long a claimed task stays ours
	WebhookTimeout    time.Duration // how long one webhook send may take
	SweepEvery        time.Duration // release sweep interval
	TimeoutCloseEvery time.Duration // timeout close of unpaid orders interval
	LeaseRescueEvery  time.Duration // rescue of expired leases interval
	CouponExpiry      string        // CouponExpiryExtend or CouponExpiryKeep
	CouponExtendDays  int           // days added by CouponExpiryExtend
	PointsExpiry      string        // CouponExpiryExtend or CouponExpiryKeep, for points given back
	PointsExtendDays  int           // days PointsExpiry extend guarantees from a release or refund
	Demo              bool          // seed demo data on start
	LogFormat         string        // LogFormatAuto, LogFormatJSON or LogFormatText
	TZ                string        // business time zone: report days, schedules, and dashboard times until the browser tells its own
	Args              []string      // positional arguments left after the flags
	// Migrate says serve, web and worker apply pending migrations at
	// start; false (for PostgreSQL deployments that run "unhold migrate"
	// first) refuses a schema other than the binary's instead.
	Migrate bool
	// MetricsAddr is where "unhold worker", which has no dashboard, serves
	// /healthz and /metrics; empty: nowhere.
	MetricsAddr string
	CPUProfile  string // write a CPU profile of the whole run to this file

	// Daily jobs, in TZ. A schedule is "@every <duration>" or a 5-field
	// cron spec (robfig/cron's standard parser); a bare duration means @every.
	ReconcileAt          string        // daily reconciliation, "HH:MM"
	ReconUncheckedAfter  int           // runs in a row that skip a key before it gets an UNCHECKED ticket
	LedgerReportSchedule string        // yesterday's ledger totals
	CleanupSchedule      string        // deletion of old attempts of finished tasks
	AttemptRetentionDays int           // how long those attempts (and recorded job runs) are kept
	EventsKeep           time.Duration // how long events are kept for pollers (docs/events.md), by the same cleanup
	JobLease             time.Duration // a cron job's lease across instances, renewed while it runs
	// BackupDir, when set, is where the backup job writes a copy of the
	// SQLite database on BackupSchedule, keeping the BackupKeep newest.
	BackupDir      string
	BackupSchedule string
	BackupKeep     int

	// Accounts and HTTP hardening.
	SessionIdle     time.Duration // a dashboard session ends after this long without a request
	SessionMax      time.Duration // and this long after sign-in whatever happens
	MetricsToken    string        // bearer token that may read /metrics from off the loopback; empty: loopback only
	TLSCert, TLSKey string        // serve HTTPS with this certificate and key (both or neither)
	// PublicURL is the origin browsers reach the dashboard at
	// ("https://unhold.example.com"); requests for any other host are
	// refused (see Hosts). Empty: the loopback names on Addr's port.
	PublicURL string
	// TrustedProxies are the reverse proxies whose X-Forwarded-For names
	// the client; with none, the client is the connection's address.
	TrustedProxies []*net.IPNet

	// Resources are the resource types declared in the resources file
	// (docs/resources-file.md), in the file's order; nil: none.
	Resources []DeclaredResource

	// ManualSLA is how long a MANUAL task or an open reconciliation ticket
	// may wait for a person before it is past the SLA (the overview's
	// buckets, the lists' marks, the metrics and their alert).
	ManualSLA time.Duration
	// ApprovalThreshold is the smallest amount, in a task's own units, of
	// a balance, points or approval: true task whose rerun or abandon
	// needs a second person's approval; 0: every one.
	ApprovalThreshold int64
	// RetryDefault is the retry policy of every type and class (-retry-steps,
	// -retry-tries); Retry are the resources file's own policies of a
	// type, a class or both, in the file's order.
	RetryDefault models.RetryPolicy
	Retry        []models.RetryPolicy
}

// Load parses args (without the program name or subcommand) with getenv
// supplying the defaults, usually os.Getenv. An error names the bad setting
// as the user wrote it (flag or environment variable) and what it accepts.
// For -h it returns an error wrapping flag.ErrHelp that lists the flags.
func Load(args []string, getenv func(string) string) (Config, error) {
	fs := flag.NewFlagSet("unhold", flag.ContinueOnError)
	fs.SetOutput(io.Discard)

	// Every value is first read as text so that a bad environment variable
	// overridden by a good flag is not an error, and so that errors can
	// name whichever of the two supplied the value.
	var settings []*setting
	text := func(flagName, env, def, usage string) *setting {
		s := &setting{flag: flagName, env: env}
		if v := getenv(env); v != "" {
			def = v
		}
		fs.StringVar(&s.value, flagName, def, usage+" ($"+env+")")
		settings = append(settings, s)
		return s
	}

	db := text("db", "UNHOLD_DB", "unhold.db", "SQLite file path or postgres:// URL")
	addr := text("addr", "UNHOLD_ADDR", "127.0.0.1:8080", "HTTP listen address")
	workerID := text("worker-id", "UNHOLD_WORKER_ID", defaultWorkerID(), "worker name used as lease owner")
	batch := text("worker-batch", "UNHOLD_WORKER_BATCH", "200", "tasks claimed per worker round, 1 to 1000")
	closeGroup := text("close-group", "UNHOLD_CLOSE_GROUP", "64",
		"closes that arrive together may share one write transaction, up to this many, 1 to 1000, and so may placements and payments on SQLite (1: each commits alone)")
	pgWriters := text("pg-writers", "UNHOLD_PG_WRITERS", "8",
		"PostgreSQL: write transactions this process runs at once, 1 to 64; the release worker's alone, every other round; unhold worker: at least -pools (SQLite: always one)")
	pools := text("pools", "UNHOLD_POOLS", "1", "worker loops in this process, 1 to 64")
	lease := text("lease", "UNHOLD_LEASE", "30s", "task lease duration, at least 1s")
	webhookTimeout := text("webhook-timeout", "UNHOLD_WEBHOOK_TIMEOUT", "10s", "how long one webhook send may take, 1s to 5m")
	sweep := text("sweep-every", "UNHOLD_SWEEP_EVERY", "2s", "release sweep interval")
	timeoutClose := text("timeout-close-every", "UNHOLD_TIMEOUT_CLOSE_EVERY", "10s", "timeout close interval")
	rescue := text("lease-rescue-every", "UNHOLD_LEASE_RESCUE_EVERY", "30s", "lease rescue interval")
	reconAt := text("recon-at", "UNHOLD_RECON_AT", "03:00", "daily reconciliation time, HH:MM in -tz")
	uncheckedAfter := text("recon-unchecked-after", "UNHOLD_RECON_UNCHECKED_AFTER", "3",
		"reconciliation runs in a row that leave a key unchecked before it gets an UNCHECKED ticket, 1 to 100")
	reportSched := text("ledger-report-schedule", "UNHOLD_LEDGER_REPORT_SCHEDULE", "5 0 * * *",
		"daily ledger report schedule: @every <duration> or a 5-field cron spec, in -tz")
	cleanupSched := text("cleanup-schedule", "UNHOLD_CLEANUP_SCHEDULE", "30 4 * * *",
		"cleanup of old task attempts: @every <duration> or a 5-field cron spec, in -tz")
	retention := text("attempt-retention-days", "UNHOLD_ATTEMPT_RETENTION_DAYS", "90",
		"days an attempt of a finished task (and a recorded job run) is kept, 1 to 3650")
	eventsKeep := text("events-keep", "UNHOLD_EVENTS_KEEP", "168h", "how long events are kept for pollers, 1h to 8760h")
	jobLease := text("job-lease", "UNHOLD_JOB_LEASE", "1m", "a cron job's lease across instances, at least 3s")
	sessionIdle := text("session-idle", "UNHOLD_SESSION_IDLE", "30m", "dashboard session idle timeout, 1m to 24h")
	sessionMax := text("session-max", "UNHOLD_SESSION_MAX", "12h", "dashboard session absolute timeout, at least the idle one, up to 720h")
	metricsToken := text("metrics-token", "UNHOLD_METRICS_TOKEN", "", "bearer token for /metrics from off the loopback (empty: loopback only)")
	tlsCert := text("tls-cert", "UNHOLD_TLS_CERT", "", "TLS certificate file (PEM); with -tls-key, serve HTTPS")
	tlsKey := text("tls-key", "UNHOLD_TLS_KEY", "", "TLS private key file (PEM); with -tls-cert, serve HTTPS")
	publicURL := text("public-url", "UNHOLD_PUBLIC_URL", "",
		"origin browsers use, like https://unhold.example.com; other Host headers are refused (empty: loopback names on -addr's port)")
	proxies := text("trusted-proxies", "UNHOLD_TRUSTED_PROXIES", "",
		"comma-separated addresses or CIDR ranges of reverse proxies whose X-Forwarded-For is believed")
	metricsAddr := text("metrics-addr", "UNHOLD_METRICS_ADDR", "", "unhold worker only: host:port serving /healthz and /metrics (empty: none)")
	cpuProfile := text("cpuprofile", "UNHOLD_CPUPROFILE", "", "write a CPU profile of the process to this file until it stops")
	couponExpiry := text("coupon-expiry", "UNHOLD_COUPON_EXPIRY", CouponExpiryExtend, "released expired coupons: extend or keep")
	extendDays := text("coupon-extend-days", "UNHOLD_COUPON_EXTEND_DAYS", "3", "days added to a released expired coupon, 0 to 365")
	pointsExpiry := text("points-expiry", "UNHOLD_POINTS_EXPIRY", CouponExpiryExtend,
		"points given back by a release or refund: extend their account's expiry, or keep it")
	pointsDays := text("points-extend-days", "UNHOLD_POINTS_EXTEND_DAYS", "3",
		"days from a release or refund that extend guarantees points' expiry, 0 to 365")
	logFormat := text("log-format", "UNHOLD_LOG_FORMAT", LogFormatAuto, "log format: auto, json or text")
	tz := text("tz", "UNHOLD_TZ", "Asia/Shanghai",
		"the shop's business time zone (IANA name): days of the daily report and its CSV, the daily jobs' schedules, and dashboard times until a browser tells its own")
	resources := text("resources", "UNHOLD_RESOURCES", "",
		"YAML file declaring more resource types, counters and remote ones (empty: none; see docs/resources-file.md)")
	manualSLA := text("manual-sla", "UNHOLD_MANUAL_SLA", "4h",
		"how long a MANUAL task or an open reconciliation ticket may wait for a person before it is past the SLA, 1m to 720h")

	approvalThreshold := text("approval-threshold", "UNHOLD_APPROVAL_THRESHOLD", "0",
		"smallest amount (in the type's own units) of a balance, points or approval: true task whose rerun or abandon needs a second person's approval; 0: every one")
	retrySteps := text("retry-steps", "UNHOLD_RETRY_STEPS", "1s,5s,30s,5m,30m",
		"default retry policy: the waits after the 1st, 2nd ... failure in a row, the last repeating (the resources file's retry: list sets a type's or class's own)")
	retryTries := text("retry-tries", "UNHOLD_RETRY_TRIES", "8",
		"default retry policy: failures in a row that send a task to MANUAL, 1 to 1000")

	backupDir := text("backup-dir", "UNHOLD_BACKUP_DIR", "",
		"SQLite only: directory the backup job writes copies of the database to (empty: no backup job; see docs/backup-and-upgrade.md)")
	backupSched := text("backup-schedule", "UNHOLD_BACKUP_SCHEDULE", "15 3 * * *",
		"backup job schedule: @every <duration> or a 5-field cron spec, in -tz")
	backupKeep := text("backup-keep", "UNHOLD_BACKUP_KEEP", "7", "backups the backup job keeps in -backup-dir, the newest, 1 to 1000")

	// -demo and -migrate are real bool flags so that a bare "-demo" works.
	boolean := func(name, env string, def bool, usage string) (*bool, error) {
		if v := getenv(env); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return nil, fmt.Errorf("config: %s must be true or false, got %q", env, v)
			}
			def = b
		}
		return fs.Bool(name, def, usage+" ($"+env+")"), nil
	}
	demo, err := boolean("demo", "UNHOLD_DEMO", false, "seed demo data on start")
	if err != nil {
		return Config{}, err
	}
	migrate, err := boolean("migrate", "UNHOLD_MIGRATE", true,
		"serve, web and worker apply pending migrations at start; false refuses a schema other than this binary's (run unhold migrate first)")
	if err != nil {
		return Config{}, err
	}

	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			var b strings.Builder
			fs.SetOutput(&b)
			fs.PrintDefaults()
			return Config{}, fmt.Errorf("config: %w; flags:\n%s", err, b.String())
		}
		return Config{}, fmt.Errorf("config: %w", err)
	}
	fs.Visit(func(f *flag.Flag) {
		for _, s := range settings {
			if s.flag == f.Name {
				s.fromFlag = true
			}
		}
	})

	cfg := Config{Demo: *demo, Migrate: *migrate, Args: fs.Args()}
	if cfg.DB, err = nonEmpty(db, "a SQLite file path or a postgres:// URL"); err != nil {
		return Config{}, err
	}
	if cfg.Addr, err = hostPort(addr); err != nil {
		return Config{}, err
	}
	if cfg.WorkerID, err = nonEmpty(workerID, "a worker name"); err != nil {
		return Config{}, err
	}
	if cfg.WorkerBatch, err = intIn(batch, 1, 1000); err != nil {
		return Config{}, err
	}
	if cfg.Pools, err = intIn(pools, 1, 64); err != nil {
		return Config{}, err
	}
	if cfg.CloseGroup, err = intIn(closeGroup, 1, 1000); err != nil {
		return Config{}, err
	}
	if cfg.PGWriters, err = intIn(pgWriters, 1, 64); err != nil {
		return Config{}, err
	}
	if cfg.MetricsAddr = metricsAddr.value; cfg.MetricsAddr != "" {
		if _, err = hostPort(metricsAddr); err != nil {
			return Config{}, err
		}
	}
	cfg.CPUProfile = cpuProfile.value
	if cfg.LeaseDuration, err = durationMin(lease, time.Second); err != nil {
		return Config{}, err
	}
	if cfg.WebhookTimeout, err = durationMin(webhookTimeout, time.Second); err != nil {
		return Config{}, err
	}
	if cfg.WebhookTimeout > 5*time.Minute {
		return Config{}, webhookTimeout.errorf("a duration from 1s to 5m")
	}
	if cfg.SweepEvery, err = interval(sweep); err != nil {
		return Config{}, err
	}
	if cfg.TimeoutCloseEvery, err = interval(timeoutClose); err != nil {
		return Config{}, err
	}
	if cfg.LeaseRescueEvery, err = interval(rescue); err != nil {
		return Config{}, err
	}
	if cfg.ReconcileAt, err = clockTime(reconAt); err != nil {
		return Config{}, err
	}
	if cfg.ReconUncheckedAfter, err = intIn(uncheckedAfter, 1, 100); err != nil {
		return Config{}, err
	}
	if cfg.ApprovalThreshold, err = wholeNumber(approvalThreshold); err != nil {
		return Config{}, err
	}
	if cfg.LedgerReportSchedule, err = schedule(reportSched); err != nil {
		return Config{}, err
	}
	if cfg.CleanupSchedule, err = schedule(cleanupSched); err != nil {
		return Config{}, err
	}
	if cfg.AttemptRetentionDays, err = intIn(retention, 1, 3650); err != nil {
		return Config{}, err
	}
	if cfg.EventsKeep, err = durationIn(eventsKeep, time.Hour, 8760*time.Hour); err != nil {
		return Config{}, err
	}
	if cfg.BackupDir = backupDir.value; cfg.BackupDir != "" && models.IsPostgres(cfg.DB) {
		return Config{}, backupDir.errorf("empty with a postgres:// -db (back PostgreSQL up with pg_dump)")
	}
	if cfg.BackupSchedule, err = schedule(backupSched); err != nil {
		return Config{}, err
	}
	if cfg.BackupKeep, err = intIn(backupKeep, 1, 1000); err != nil {
		return Config{}, err
	}
	if cfg.JobLease, err = durationMin(jobLease, 3*time.Second); err != nil {
		return Config{}, err
	}
	if cfg.SessionIdle, err = durationIn(sessionIdle, time.Minute, 24*time.Hour); err != nil {
		return Config{}, err
	}
	if cfg.SessionMax, err = durationIn(sessionMax, cfg.SessionIdle, 720*time.Hour); err != nil {
		return Config{}, err
	}
	cfg.MetricsToken = metricsToken.value
	if v := cfg.MetricsToken; v != "" && (len(v) < 16 || strings.ContainsAny(v, " \t\r\n")) {
		return Config{}, metricsToken.errorf("empty, or at least 16 characters without spaces")
	}
	cfg.TLSCert, cfg.TLSKey = tlsCert.value, tlsKey.value
	if (cfg.TLSCert == "") != (cfg.TLSKey == "") {
		set, unset := tlsKey, tlsCert
		if cfg.TLSKey == "" {
			set, unset = tlsCert, tlsKey
		}
		return Config{}, fmt.Errorf("config: %s is set but %s is not; HTTPS needs both", set.name(), unset.name())
	}
	if cfg.PublicURL, err = origin(publicURL); err != nil {
		return Config{}, err
	}
	if cfg.TrustedProxies, err = cidrs(proxies); err != nil {
		return Config{}, err
	}
	if cfg.CouponExpiry, err = oneOf(couponExpiry, CouponExpiryExtend, CouponExpiryKeep); err != nil {
		return Config{}, err
	}
	if cfg.CouponExtendDays, err = intIn(extendDays, 0, 365); err != nil {
		return Config{}, err
	}
	if cfg.PointsExpiry, err = oneOf(pointsExpiry, CouponExpiryExtend, CouponExpiryKeep); err != nil {
		return Config{}, err
	}
	if cfg.PointsExtendDays, err = intIn(pointsDays, 0, 365); err != nil {
		return Config{}, err
	}
	if cfg.LogFormat, err = oneOf(logFormat, LogFormatAuto, LogFormatJSON, LogFormatText); err != nil {
		return Config{}, err
	}
	if _, err := time.LoadLocation(tz.value); err != nil || tz.value == "" {
		return Config{}, tz.errorf("an IANA time zone name such as Asia/Shanghai or UTC")
	}
	cfg.TZ = tz.value
	if cfg.RetryDefault, err = retryDefault(retrySteps, retryTries); err != nil {
		return Config{}, err
	}
	if cfg.Resources, cfg.Retry, err = declared(resources, getenv, cfg.RetryDefault); err != nil {
		return Config{}, err
	}
	if cfg.ManualSLA, err = durationIn(manualSLA, time.Minute, 720*time.Hour); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// setting is one flag/environment variable pair and its raw value.
type setting struct {
	flag, env string
	value     string
	fromFlag  bool
}

// name is how the user supplied the value, for error messages.
func (s *setting) name() string {
	if s.fromFlag {
		return "-" + s.flag
	}
	return s.env
}

func (s *setting) errorf(accepted string) error {
	return fmt.Errorf("config: %s must be %s, got %q", s.name(), accepted, s.value)
}

func defaultWorkerID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unhold"
	}
	return host + "-" + strconv.Itoa(os.Getpid())
}

func nonEmpty(s *setting, accepted string) (string, error) {
	if strings.TrimSpace(s.value) == "" {
		return "", s.errorf(accepted)
	}
	return s.value, nil
}

func hostPort(s *setting) (string, error) {
	if _, port, err := net.SplitHostPort(s.value); err != nil || port == "" {
		return "", s.errorf("a host:port address like 127.0.0.1:8080")
	}
	return s.value, nil
}

// origin accepts "" or an http(s) origin: scheme and host, an optional
// port and path "/", nothing else; it returns it without the slash, the
// host in lower case.
func origin(s *setting) (string, error) {
	if s.value == "" {
		return "", nil
	}
	u, err := url.Parse(s.value)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return "", s.errorf("empty, or an origin like https://unhold.example.com (scheme, host and port only)")
	}
	return u.Scheme + "://" + strings.ToLower(u.Host), nil
}

// Hosts are the Host header values the dashboard answers to: the public
// URL's host (with and without its scheme's default port), or, without
// one, 127.0.0.1, localhost and [::1] on Addr's port, so that a page on
// another site cannot reach it under a rebound DNS name.
func (c Config) Hosts() []string {
	if c.PublicURL != "" {
		u, _ := url.Parse(c.PublicURL) // checked by Load
		def := map[string]string{"http": "80", "https": "443"}[u.Scheme]
		if port := u.Port(); port == "" || port == def {
			return []string{strings.TrimSuffix(net.JoinHostPort(u.Hostname(), ""), ":"), net.JoinHostPort(u.Hostname(), def)}
		}
		return []string{u.Host}
	}
	_, port, _ := net.SplitHostPort(c.Addr)
	var out []string
	for _, h := range []string{"127.0.0.1", "localhost", "::1"} {
		out = append(out, net.JoinHostPort(h, port))
		if (port == "80" && c.TLSCert == "") || (port == "443" && c.TLSCert != "") {
			out = append(out, strings.TrimSuffix(net.JoinHostPort(h, ""), ":"))
		}
	}
	return out
}

func intIn(s *setting, lo, hi int) (int, error) {
	n, err := strconv.Atoi(s.value)
	if err != nil || n < lo || n > hi {
		return 0, s.errorf(fmt.Sprintf("an integer from %d to %d", lo, hi))
	}
	return n, nil
}

// wholeNumber reads an amount: a whole number, 0 or more.
func wholeNumber(s *setting) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(s.value), 10, 64)
	if err != nil || n < 0 {
		return 0, s.errorf("a whole number of 0 or more")
	}
	return n, nil
}

func durationMin(s *setting, lo time.Duration) (time.Duration, error) {
	d, err := time.ParseDuration(s.value)
	if err != nil || d < lo {
		return 0, s.errorf(fmt.Sprintf("a duration of at least %s, like 30s or 2m", lo))
	}
	return d, nil
}

// cidrs reads a comma-separated list of addresses (a /32 or /128 each) and
// CIDR ranges.
func cidrs(s *setting) ([]*net.IPNet, error) {
	var out []*net.IPNet
	for _, part := range strings.Split(s.value, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if ip := net.ParseIP(part); ip != nil {
			bits := 128
			if ip.To4() != nil {
				ip, bits = ip.To4(), 32
			}
			out = append(out, &net.IPNet{IP: ip, Mask: net.CIDRMask(bits, bits)})
			continue
		}
		_, n, err := net.ParseCIDR(part)
		if err != nil {
			return nil, s.errorf("comma-separated addresses or CIDR ranges like 10.0.0.0/8,192.0.2.7")
		}
		out = append(out, n)
	}
	return out, nil
}

func durationIn(s *setting, lo, hi time.Duration) (time.Duration, error) {
	d, err := time.ParseDuration(s.value)
	if err != nil || d < lo || d > hi {
		return 0, s.errorf(fmt.Sprintf("a duration from %s to %s, like 30m or 12h", lo, hi))
	}
	return d, nil
}

func oneOf(s *setting, accepted ...string) (string, error) {
	for _, a := range accepted {
		if s.value == a {
			return a, nil
		}
	}
	return "", s.errorf("one of " + strings.Join(accepted, ", "))
}

// interval is a job interval: the scheduler ticks in whole seconds.
func interval(s *setting) (time.Duration, error) {
	d, err := time.ParseDuration(s.value)
	if err != nil || d < time.Second || d%time.Second != 0 {
		return 0, s.errorf("a whole number of seconds, at least 1s, like 10s or 2m")
	}
	return d, nil
}

// clockTime is a time of day, HH:MM from 00:00 to 23:59, as the scheduler
// reads it (jobs.ParseClock).
func clockTime(s *setting) (string, error) {
	hour, minute, err := jobs.ParseClock(s.value)
	if err != nil {
		return "", s.errorf("a time of day HH:MM from 00:00 to 23:59")
	}
	return fmt.Sprintf("%02d:%02d", hour, minute), nil
}

// schedule is a job schedule as the scheduler reads it (jobs.ParseSpec):
// "@every <d>" in whole seconds of at least 1s, or what robfig/cron's
// standard parser takes (a 5-field spec, or a descriptor such as @daily),
// without a time zone of its own. A bare duration means @every.
func schedule(s *setting) (string, error) {
	spec := strings.TrimSpace(s.value)
	if _, err := time.ParseDuration(spec); err == nil {
		spec = "@every " + spec
	}
	if _, err := jobs.ParseSpec(spec); err != nil {
		return "", s.errorf(`@every <duration> (whole seconds, at least 1s) or a 5-field cron spec like "5 0 * * *"`)
	}
	return spec, nil
}
