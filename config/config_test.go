package config

import (
	"errors"
	"flag"
	"net"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"unhold/models"
)

func defaults(t *testing.T) Config {
	t.Helper()
	host, err := os.Hostname()
	if err != nil {
		t.Fatalf("hostname: %v", err)
	}
	return Config{
		DB:                "unhold.db",
		Addr:              "127.0.0.1:8080",
		WorkerID:          host + "-" + strconv.Itoa(os.Getpid()),
		WorkerBatch:       200,
		CloseGroup:        64,
		PGWriters:         8,
		Pools:             1,
		LeaseDuration:     30 * time.Second,
		WebhookTimeout:    10 * time.Second,
		SweepEvery:        2 * time.Second,
		TimeoutCloseEvery: 10 * time.Second,
		LeaseRescueEvery:  30 * time.Second,
		CouponExpiry:      CouponExpiryExtend,
		CouponExtendDays:  3,
		PointsExpiry:      CouponExpiryExtend,
		PointsExtendDays:  3,
		Demo:              false,
		Migrate:           true,
		LogFormat:         LogFormatAuto,
		TZ:                "Asia/Shanghai",

		ReconcileAt:          "03:00",
		ReconUncheckedAfter:  3,
		LedgerReportSchedule: "5 0 * * *",
		CleanupSchedule:      "30 4 * * *",
		AttemptRetentionDays: 90,
		EventsKeep:           168 * time.Hour,
		JobLease:             time.Minute,
		BackupSchedule:       "15 3 * * *",
		BackupKeep:           7,

		SessionIdle: 30 * time.Minute,
		SessionMax:  12 * time.Hour,

		ManualSLA:    4 * time.Hour,
		RetryDefault: models.DefaultRetryPolicy,
	}
}

func TestLoad(t *testing.T) {
	t.Parallel()

	allEnv := map[string]string{
		"UNHOLD_DB":                  "postgres://u@db/unhold",
		"UNHOLD_ADDR":                ":9090",
		"UNHOLD_WORKER_ID":           "w-env",
		"UNHOLD_WORKER_BATCH":        "7",
		"UNHOLD_CLOSE_GROUP":         "1",
		"UNHOLD_PG_WRITERS":          "5",
		"UNHOLD_POOLS":               "3",
		"UNHOLD_METRICS_ADDR":        "127.0.0.1:9091",
		"UNHOLD_LEASE":               "1m",
		"UNHOLD_SWEEP_EVERY":         "5s",
		"UNHOLD_TIMEOUT_CLOSE_EVERY": "20s",
		"UNHOLD_LEASE_RESCUE_EVERY":  "45s",
		"UNHOLD_COUPON_EXPIRY":       "keep",
		"UNHOLD_COUPON_EXTEND_DAYS":  "0",
		"UNHOLD_POINTS_EXPIRY":       "keep",
		"UNHOLD_POINTS_EXTEND_DAYS":  "30",
		"UNHOLD_DEMO":                "true",
		"UNHOLD_MIGRATE":             "false",
		"UNHOLD_BACKUP_SCHEDULE":     "@every 12h",
		"UNHOLD_BACKUP_KEEP":         "30",
		"UNHOLD_LOG_FORMAT":          "json",
		"UNHOLD_TZ":                  "Europe/Berlin",

		"UNHOLD_RECON_AT":               "4:30",
		"UNHOLD_LEDGER_REPORT_SCHEDULE": "@daily",
		"UNHOLD_CLEANUP_SCHEDULE":       "6h",
		"UNHOLD_ATTEMPT_RETENTION_DAYS": "30",
		"UNHOLD_EVENTS_KEEP":            "72h",
		"UNHOLD_JOB_LEASE":              "2m",
		"UNHOLD_SESSION_IDLE":           "10m",
		"UNHOLD_SESSION_MAX":            "8h",
		"UNHOLD_METRICS_TOKEN":          "scrape-token-0123456789",
		"UNHOLD_TLS_CERT":               "cert.pem",
		"UNHOLD_TLS_KEY":                "key.pem",
		"UNHOLD_TRUSTED_PROXIES":        "10.0.0.0/8, 192.0.2.7,::1",
		"UNHOLD_MANUAL_SLA":             "90m",
	}

	tests := []struct {
		name string
		env  map[string]string
		args []string
		want func(c *Config) // changes from defaults
	}{
		{name: "defaults", want: func(c *Config) {}},
		{
			name: "env",
			env:  allEnv,
			want: func(c *Config) {
				c.DB = "postgres://u@db/unhold"
				c.Addr = ":9090"
				c.WorkerID = "w-env"
				c.WorkerBatch = 7
				c.CloseGroup = 1
				c.PGWriters = 5
				c.Pools = 3
				c.MetricsAddr = "127.0.0.1:9091"
				c.LeaseDuration = time.Minute
				c.SweepEvery = 5 * time.Second
				c.TimeoutCloseEvery = 20 * time.Second
				c.LeaseRescueEvery = 45 * time.Second
				c.CouponExpiry = CouponExpiryKeep
				c.CouponExtendDays = 0
				c.PointsExpiry = CouponExpiryKeep
				c.PointsExtendDays = 30
				c.Demo = true
				c.Migrate = false
				c.BackupSchedule = "@every 12h"
				c.BackupKeep = 30
				c.LogFormat = LogFormatJSON
				c.TZ = "Europe/Berlin"
				c.ReconcileAt = "04:30"
				c.LedgerReportSchedule = "@daily"
				c.CleanupSchedule = "@every 6h"
				c.AttemptRetentionDays = 30
				c.EventsKeep = 72 * time.Hour
				c.JobLease = 2 * time.Minute
				c.SessionIdle = 10 * time.Minute
				c.SessionMax = 8 * time.Hour
				c.MetricsToken = "scrape-token-0123456789"
				c.TLSCert, c.TLSKey = "cert.pem", "key.pem"
				c.TrustedProxies = []*net.IPNet{
					{IP: net.IP{10, 0, 0, 0}, Mask: net.CIDRMask(8, 32)},
					{IP: net.IP{192, 0, 2, 7}, Mask: net.CIDRMask(32, 32)},
					{IP: net.ParseIP("::1"), Mask: net.CIDRMask(128, 128)},
				}
				c.ManualSLA = 90 * time.Minute
			},
		},
		{
			name: "flags over env",
			env:  allEnv,
			args: []string{
				"-db", "shop.db",
				"-addr", "127.0.0.1:8081",
				"-worker-id", "w-flag",
				"-worker-batch", "1000",
				"-close-group", "1000",
				"-pg-writers", "64",
				"-pools", "64",
				"-metrics-addr", "",
				"-cpuprofile", "cpu.out",
				"-lease", "1s",
				"-sweep-every", "3s",
				"-timeout-close-every", "1m",
				"-lease-rescue-every", "2m",
				"-coupon-expiry", "extend",
				"-coupon-extend-days", "365",
				"-points-expiry", "extend",
				"-points-extend-days", "0",
				"-demo=false",
				"-migrate",
				"-backup-dir", "/var/backups/unhold",
				"-backup-schedule", "0 2 * * *",
				"-backup-keep", "1",
				"-log-format", "text",
				"-tz", "UTC",
				"-recon-at", "23:59",
				"-recon-unchecked-after", "100",
				"-ledger-report-schedule", "10 0 * * *",
				"-cleanup-schedule", "@every 1h30m",
				"-attempt-retention-days", "3650",
				"-events-keep", "8760h",
				"-job-lease", "3s",
				"-session-idle", "1m",
				"-session-max", "1m",
				"-metrics-token", "",
				"-tls-cert", "",
				"-tls-key", "",
				"-trusted-proxies", "",
				"-manual-sla", "720h",
			},
			want: func(c *Config) {
				c.DB = "shop.db"
				c.Addr = "127.0.0.1:8081"
				c.WorkerID = "w-flag"
				c.WorkerBatch = 1000
				c.CloseGroup = 1000
				c.PGWriters = 64
				c.Pools = 64
				c.CPUProfile = "cpu.out"
				c.LeaseDuration = time.Second
				c.SweepEvery = 3 * time.Second
				c.TimeoutCloseEvery = time.Minute
				c.LeaseRescueEvery = 2 * time.Minute
				c.CouponExpiry = CouponExpiryExtend
				c.CouponExtendDays = 365
				c.PointsExpiry = CouponExpiryExtend
				c.PointsExtendDays = 0
				c.Demo = false
				c.Migrate = true
				c.BackupDir = "/var/backups/unhold"
				c.BackupSchedule = "0 2 * * *"
				c.BackupKeep = 1
				c.LogFormat = LogFormatText
				c.TZ = "UTC"
				c.ReconcileAt = "23:59"
				c.ReconUncheckedAfter = 100
				c.LedgerReportSchedule = "10 0 * * *"
				c.CleanupSchedule = "@every 1h30m"
				c.AttemptRetentionDays = 3650
				c.EventsKeep = 8760 * time.Hour
				c.JobLease = 3 * time.Second
				c.SessionIdle = time.Minute
				c.SessionMax = time.Minute
				c.ManualSLA = 720 * time.Hour
			},
		},
		{
			name: "good flag hides bad env",
			env:  map[string]string{"UNHOLD_WORKER_BATCH": "abc", "UNHOLD_LOG_FORMAT": "xml"},
			args: []string{"-worker-batch", "1", "-log-format", "json"},
			want: func(c *Config) { c.WorkerBatch = 1; c.LogFormat = LogFormatJSON },
		},
		{
			name: "approval threshold",
			env:  map[string]string{"UNHOLD_APPROVAL_THRESHOLD": "500"},
			want: func(c *Config) { c.ApprovalThreshold = 500 },
		},
		{
			name: "default retry policy",
			env:  map[string]string{"UNHOLD_RETRY_TRIES": "3"},
			args: []string{"-retry-steps", "2s, 1m,1m"},
			want: func(c *Config) {
				c.RetryDefault = models.RetryPolicy{Steps: []time.Duration{2 * time.Second, time.Minute, time.Minute}, Tries: 3}
			},
		},
		{
			name: "bare bool flag and double dash",
			args: []string{"--demo"},
			want: func(c *Config) { c.Demo = true },
		},
		{
			name: "positional args kept",
			args: []string{"-demo", "seed", "-x"},
			want: func(c *Config) { c.Demo = true; c.Args = []string{"seed", "-x"} },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Load(tt.args, mapEnv(tt.env))
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			want := defaults(t)
			tt.want(&want)
			// fs.Args is nil or empty depending on the arguments; both mean none.
			if !slices.Equal(got.Args, want.Args) {
				t.Errorf("Args = %q, want %q", got.Args, want.Args)
			}
			got.Args, want.Args = nil, nil
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Load =\n%+v\nwant\n%+v", got, want)
			}
		})
	}
}

func TestLoadInvalid(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		env     map[string]string
		args    []string
		wantErr string
	}{
		{"db empty flag", nil, []string{"-db", ""},
			`config: -db must be a SQLite file path or a postgres:// URL, got ""`},
		{"addr no port", map[string]string{"UNHOLD_ADDR": "localhost"}, nil,
			`config: UNHOLD_ADDR must be a host:port address like 127.0.0.1:8080, got "localhost"`},
		{"addr empty port", nil, []string{"-addr", "127.0.0.1:"},
			`config: -addr must be a host:port address like 127.0.0.1:8080, got "127.0.0.1:"`},
		{"worker id blank", nil, []string{"-worker-id", " "},
			`config: -worker-id must be a worker name, got " "`},
		{"batch not a number", map[string]string{"UNHOLD_WORKER_BATCH": "abc"}, nil,
			`config: UNHOLD_WORKER_BATCH must be an integer from 1 to 1000, got "abc"`},
		{"approval threshold negative", nil, []string{"-approval-threshold", "-1"},
			`config: -approval-threshold must be a whole number of 0 or more, got "-1"`},
		{"approval threshold not whole", map[string]string{"UNHOLD_APPROVAL_THRESHOLD": "1.5"}, nil,
			`config: UNHOLD_APPROVAL_THRESHOLD must be a whole number of 0 or more, got "1.5"`},
		{"pools zero", nil, []string{"-pools", "0"},
			`config: -pools must be an integer from 1 to 64, got "0"`},
		{"pools too many", map[string]string{"UNHOLD_POOLS": "65"}, nil,
			`config: UNHOLD_POOLS must be an integer from 1 to 64, got "65"`},
		{"metrics addr no port", nil, []string{"-metrics-addr", "localhost"},
			`config: -metrics-addr must be a host:port address like 127.0.0.1:8080, got "localhost"`},
		{"batch zero", nil, []string{"-worker-batch", "0"},
			`config: -worker-batch must be an integer from 1 to 1000, got "0"`},
		{"batch too big", map[string]string{"UNHOLD_WORKER_BATCH": "1001"}, nil,
			`config: UNHOLD_WORKER_BATCH must be an integer from 1 to 1000, got "1001"`},
		{"close group zero", nil, []string{"-close-group", "0"},
			`config: -close-group must be an integer from 1 to 1000, got "0"`},
		{"pg writers zero", nil, []string{"-pg-writers", "0"},
			`config: -pg-writers must be an integer from 1 to 64, got "0"`},
		{"pg writers too many", map[string]string{"UNHOLD_PG_WRITERS": "65"}, nil,
			`config: UNHOLD_PG_WRITERS must be an integer from 1 to 64, got "65"`},
		{"webhook timeout too long", map[string]string{"UNHOLD_WEBHOOK_TIMEOUT": "6m"}, nil,
			`config: UNHOLD_WEBHOOK_TIMEOUT must be a duration from 1s to 5m, got "6m"`},
		{"lease bad", map[string]string{"UNHOLD_LEASE": "30"}, nil,
			`config: UNHOLD_LEASE must be a duration of at least 1s, like 30s or 2m, got "30"`},
		{"lease too short", nil, []string{"-lease", "999ms"},
			`config: -lease must be a duration of at least 1s, like 30s or 2m, got "999ms"`},
		{"sweep zero", map[string]string{"UNHOLD_SWEEP_EVERY": "0s"}, nil,
			`config: UNHOLD_SWEEP_EVERY must be a whole number of seconds, at least 1s, like 10s or 2m, got "0s"`},
		{"sweep below a second", nil, []string{"-sweep-every", "500ms"},
			`config: -sweep-every must be a whole number of seconds, at least 1s, like 10s or 2m, got "500ms"`},
		{"timeout close negative", nil, []string{"-timeout-close-every", "-1s"},
			`config: -timeout-close-every must be a whole number of seconds, at least 1s, like 10s or 2m, got "-1s"`},
		{"lease rescue bad", map[string]string{"UNHOLD_LEASE_RESCUE_EVERY": "soon"}, nil,
			`config: UNHOLD_LEASE_RESCUE_EVERY must be a whole number of seconds, at least 1s, like 10s or 2m, got "soon"`},
		{"recon at", map[string]string{"UNHOLD_RECON_AT": "24:00"}, nil,
			`config: UNHOLD_RECON_AT must be a time of day HH:MM from 00:00 to 23:59, got "24:00"`},
		{"recon unchecked after zero", map[string]string{"UNHOLD_RECON_UNCHECKED_AFTER": "0"}, nil,
			`config: UNHOLD_RECON_UNCHECKED_AFTER must be an integer from 1 to 100, got "0"`},
		{"recon unchecked after too many", nil, []string{"-recon-unchecked-after", "101"},
			`config: -recon-unchecked-after must be an integer from 1 to 100, got "101"`},
		{"ledger report schedule", nil, []string{"-ledger-report-schedule", "0 5 0 * * *"},
			`config: -ledger-report-schedule must be @every <duration> (whole seconds, at least 1s) or a 5-field cron spec like "5 0 * * *", got "0 5 0 * * *"`},
		{"cleanup schedule", map[string]string{"UNHOLD_CLEANUP_SCHEDULE": "@every 0s"}, nil,
			`config: UNHOLD_CLEANUP_SCHEDULE must be @every <duration> (whole seconds, at least 1s) or a 5-field cron spec like "5 0 * * *", got "@every 0s"`},
		{"retention zero", nil, []string{"-attempt-retention-days", "0"},
			`config: -attempt-retention-days must be an integer from 1 to 3650, got "0"`},
		{"job lease short", map[string]string{"UNHOLD_JOB_LEASE": "2s"}, nil,
			`config: UNHOLD_JOB_LEASE must be a duration of at least 3s, like 30s or 2m, got "2s"`},
		{"coupon expiry", map[string]string{"UNHOLD_COUPON_EXPIRY": "Extend"}, nil,
			`config: UNHOLD_COUPON_EXPIRY must be one of extend, keep, got "Extend"`},
		{"coupon extend days negative", nil, []string{"-coupon-extend-days", "-1"},
			`config: -coupon-extend-days must be an integer from 0 to 365, got "-1"`},
		{"coupon extend days too big", map[string]string{"UNHOLD_COUPON_EXTEND_DAYS": "366"}, nil,
			`config: UNHOLD_COUPON_EXTEND_DAYS must be an integer from 0 to 365, got "366"`},
		{"points expiry", nil, []string{"-points-expiry", "reset"},
			`config: -points-expiry must be one of extend, keep, got "reset"`},
		{"points extend days negative", map[string]string{"UNHOLD_POINTS_EXTEND_DAYS": "-1"}, nil,
			`config: UNHOLD_POINTS_EXTEND_DAYS must be an integer from 0 to 365, got "-1"`},
		{"points extend days too big", nil, []string{"-points-extend-days", "366"},
			`config: -points-extend-days must be an integer from 0 to 365, got "366"`},
		{"retry steps not durations", nil, []string{"-retry-steps", "1s,soon"},
			`config: -retry-steps must be 1 to 20 waits, each more than 0 and at most 24h0m0s, in order, like 1s,5s,30s,5m,30m, got "1s,soon"`},
		{"retry steps zero", map[string]string{"UNHOLD_RETRY_STEPS": "0s,5s"}, nil,
			`config: UNHOLD_RETRY_STEPS must be 1 to 20 waits, each more than 0 and at most 24h0m0s, in order, like 1s,5s,30s,5m,30m: wait 1 (0s) is not more than 0, got "0s,5s"`},
		{"retry steps unsorted", nil, []string{"-retry-steps", "5s,1s"},
			`config: -retry-steps must be 1 to 20 waits, each more than 0 and at most 24h0m0s, in order, like 1s,5s,30s,5m,30m: wait 2 (1s) is shorter than the one before (5s), got "5s,1s"`},
		{"retry tries zero", nil, []string{"-retry-tries", "0"},
			`config: -retry-tries must be an integer from 1 to 1000, got "0"`},
		{"demo env", map[string]string{"UNHOLD_DEMO": "yes"}, nil,
			`config: UNHOLD_DEMO must be true or false, got "yes"`},
		{"migrate env", map[string]string{"UNHOLD_MIGRATE": "no"}, nil,
			`config: UNHOLD_MIGRATE must be true or false, got "no"`},
		{"backup dir on postgres", map[string]string{"UNHOLD_DB": "postgres://u@db/unhold"}, []string{"-backup-dir", "/backups"},
			`config: -backup-dir must be empty with a postgres:// -db (back PostgreSQL up with pg_dump), got "/backups"`},
		{"backup keep zero", nil, []string{"-backup-keep", "0"},
			`config: -backup-keep must be an integer from 1 to 1000, got "0"`},
		{"backup schedule", map[string]string{"UNHOLD_BACKUP_SCHEDULE": "3am"}, nil,
			`config: UNHOLD_BACKUP_SCHEDULE must be @every <duration> (whole seconds, at least 1s) or a 5-field cron spec like "5 0 * * *", got "3am"`},
		{"demo flag", nil, []string{"-demo=yes"},
			`config: invalid boolean value "yes" for -demo: parse error`},
		{"log format", nil, []string{"-log-format", "xml"},
			`config: -log-format must be one of auto, json, text, got "xml"`},
		{"time zone", map[string]string{"UNHOLD_TZ": "Mars/Olympus"}, nil,
			`config: UNHOLD_TZ must be an IANA time zone name such as Asia/Shanghai or UTC, got "Mars/Olympus"`},
		{"events kept too short", nil, []string{"-events-keep", "10m"},
			`config: -events-keep must be a duration from 1h0m0s to 8760h0m0s, like 30m or 12h, got "10m"`},
		{"session idle short", nil, []string{"-session-idle", "30s"},
			`config: -session-idle must be a duration from 1m0s to 24h0m0s, like 30m or 12h, got "30s"`},
		{"session max below idle", map[string]string{"UNHOLD_SESSION_IDLE": "2h", "UNHOLD_SESSION_MAX": "1h"}, nil,
			`config: UNHOLD_SESSION_MAX must be a duration from 2h0m0s to 720h0m0s, like 30m or 12h, got "1h"`},
		{"metrics token short", map[string]string{"UNHOLD_METRICS_TOKEN": "short"}, nil,
			`config: UNHOLD_METRICS_TOKEN must be empty, or at least 16 characters without spaces, got "short"`},
		{"tls key alone", nil, []string{"-tls-key", "key.pem"},
			`config: -tls-key is set but UNHOLD_TLS_CERT is not; HTTPS needs both`},
		{"trusted proxies", map[string]string{"UNHOLD_TRUSTED_PROXIES": "10.0.0.0/33"}, nil,
			`config: UNHOLD_TRUSTED_PROXIES must be comma-separated addresses or CIDR ranges like 10.0.0.0/8,192.0.2.7, got "10.0.0.0/33"`},
		{"manual sla not a duration", nil, []string{"-manual-sla", "4"},
			`config: -manual-sla must be a duration from 1m0s to 720h0m0s, like 30m or 12h, got "4"`},
		{"manual sla zero", map[string]string{"UNHOLD_MANUAL_SLA": "0s"}, nil,
			`config: UNHOLD_MANUAL_SLA must be a duration from 1m0s to 720h0m0s, like 30m or 12h, got "0s"`},
		{"manual sla negative", nil, []string{"-manual-sla", "-4h"},
			`config: -manual-sla must be a duration from 1m0s to 720h0m0s, like 30m or 12h, got "-4h"`},
		{"manual sla too short", map[string]string{"UNHOLD_MANUAL_SLA": "59s"}, nil,
			`config: UNHOLD_MANUAL_SLA must be a duration from 1m0s to 720h0m0s, like 30m or 12h, got "59s"`},
		{"manual sla too long", nil, []string{"-manual-sla", "721h"},
			`config: -manual-sla must be a duration from 1m0s to 720h0m0s, like 30m or 12h, got "721h"`},
		{"manual sla bad flag over good env", map[string]string{"UNHOLD_MANUAL_SLA": "1h"}, []string{"-manual-sla", "soon"},
			`config: -manual-sla must be a duration from 1m0s to 720h0m0s, like 30m or 12h, got "soon"`},
		{"unknown flag", nil, []string{"-verbose"},
			`config: flag provided but not defined: -verbose`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Load(tt.args, mapEnv(tt.env))
			if err == nil {
				t.Fatalf("Load: no error, want %q", tt.wantErr)
			}
			if err.Error() != tt.wantErr {
				t.Errorf("Load error\n got %q\nwant %q", err, tt.wantErr)
			}
		})
	}
}

func TestLoadHelp(t *testing.T) {
	t.Parallel()
	_, err := Load([]string{"-h"}, mapEnv(nil))
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("Load(-h) error = %v, want flag.ErrHelp", err)
	}
	for _, want := range []string{"-worker-batch", "UNHOLD_WORKER_BATCH", "-demo"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("help text does not mention %s:\n%v", want, err)
		}
	}
}

func mapEnv(env map[string]string) func(string) string {
	return func(k string) string { return env[k] }
}

// Every form a schedule may take, and the forms it may not.
func TestLoadSchedules(t *testing.T) {
	t.Parallel()
	good := map[string]string{
		"5 0 * * *":    "5 0 * * *",
		"*/15 * * * *": "*/15 * * * *",
		"0 3 * * 1-5":  "0 3 * * 1-5",
		"@every 90s":   "@every 90s",
		"@every 1h":    "@every 1h",
		"45m":          "@every 45m",
		"@daily":       "@daily",
		"@hourly":      "@hourly",
		" 5 0 * * * ":  "5 0 * * *",
	}
	for in, want := range good {
		for _, field := range []string{"-ledger-report-schedule", "-cleanup-schedule"} {
			cfg, err := Load([]string{field, in}, mapEnv(nil))
			if err != nil {
				t.Errorf("%s %q: %v", field, in, err)
				continue
			}
			got := cfg.LedgerReportSchedule
			if field == "-cleanup-schedule" {
				got = cfg.CleanupSchedule
			}
			if got != want {
				t.Errorf("%s %q = %q, want %q", field, in, got, want)
			}
		}
	}
	bad := []string{
		"", "daily", "every 5m", "@every", "@every 500ms", "@every 1.5s", "@every -1m", "@every 0s", "0s", "-5m",
		"* * * *", "0 0 0 * * *", "61 * * * *", "* 24 * * *", "* * 32 * *", "* * * 13 *", "* * * * 8",
		"@sometimes", "CRON_TZ=UTC 5 0 * * *", "TZ=Asia/Tokyo 0 3 * * *",
	}
	for _, in := range bad {
		if cfg, err := Load([]string{"-cleanup-schedule", in}, mapEnv(nil)); err == nil {
			t.Errorf("schedule %q accepted as %q", in, cfg.CleanupSchedule)
		} else if !strings.Contains(err.Error(), "-cleanup-schedule must be @every <duration>") {
			t.Errorf("schedule %q: error %q does not say what is accepted", in, err)
		}
	}
	for in, want := range map[string]string{"03:00": "03:00", "3:00": "03:00", "0:05": "00:05", "23:59": "23:59"} {
		if cfg, err := Load([]string{"-recon-at", in}, mapEnv(nil)); err != nil || cfg.ReconcileAt != want {
			t.Errorf("recon at %q = %q, %v; want %q", in, cfg.ReconcileAt, err, want)
		}
	}
	for _, in := range []string{"", "3", "3pm", "24:00", "12:60", "12:5", "012:00", "-1:00", "12:00:00", " 3:00"} {
		if _, err := Load([]string{"-recon-at", in}, mapEnv(nil)); err == nil {
			t.Errorf("recon at %q accepted", in)
		}
	}
}
