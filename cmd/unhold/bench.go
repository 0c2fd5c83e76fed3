package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"gorm.io/gorm"

	"unhold/auth"
	"unhold/config"
	"unhold/models"
)

// Bench modes.
const (
	benchBurst   = "burst"   // close every order as fast as the API takes them, beside the worker
	benchSteady  = "steady"  // close at -rate for -duration, beside the worker
	benchBacklog = "backlog" // close every order with no worker running, then start one and time the drain
	benchTimeout = "timeout" // let every order pass its pay deadline; the timeout job closes them
)

// benchSKUs is how many SKUs the orders spread over, so that several pools
// on PostgreSQL are not all queued on one row's lock.
const benchSKUs = 100

// benchStall is how long the bench waits without a single task finishing
// before it gives up.
const benchStall = 60 * time.Second

const benchUsage = `unhold bench makes a throwaway database (a SQLite file in a temp dir, or a
fresh schema in the PostgreSQL named by UNHOLD_DB, dropped afterwards), fills
a shop, starts this binary as separate processes, places orders and closes
them through the JSON API, waits for every release, checks the invariants and
prints a table and one JSON line. While the load runs, it signs in to the
dashboard as an admin and times its main pages, one every 250 ms (-pages).

Modes:
  burst    close -orders as fast as -clients concurrent clients can (unhold serve)
  steady   close -rate orders a second for -duration (unhold serve)
  backlog  close -orders under unhold web, then start unhold worker -pools P and time the drain
  timeout  place -orders that expire at once under unhold web; unhold worker's timeout job closes them

Flags:
`

// benchOptions are the flags of unhold bench.
type benchOptions struct {
	mode       string
	orders     int
	rate       float64
	duration   time.Duration
	mix        []models.ResourceType
	pools      int
	batch      int
	clients    int
	closeGroup int
	pgWriters  int
	json       bool
	ceiling    bool
	cpuProfile string
	keep       bool
	pages      bool
	// webhookDelay, when set, runs a webhook subscriber to every event
	// that answers after it (benchSubscriber).
	webhookDelay time.Duration
}

func parseBenchFlags(args []string) (benchOptions, error) {
	fs := flag.NewFlagSet("unhold bench", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var o benchOptions
	var mix string
	fs.StringVar(&o.mode, "mode", benchBurst, "burst, steady, backlog or timeout")
	fs.IntVar(&o.orders, "orders", 2000, "orders placed and closed (steady: -rate × -duration)")
	fs.Float64Var(&o.rate, "rate", 500, "steady: closes a second")
	fs.DurationVar(&o.duration, "duration", 20*time.Second, "steady: how long closes arrive")
	fs.StringVar(&mix, "mix", "inventory", "resource types each order holds, comma-separated: "+resourceList())
	fs.IntVar(&o.pools, "pools", 1, "worker pools (-pools of the serving worker)")
	fs.IntVar(&o.batch, "batch", 200, "tasks a worker claims at a time (-worker-batch)")
	fs.IntVar(&o.clients, "clients", 8, "concurrent API clients placing and closing")
	fs.IntVar(&o.closeGroup, "close-group", 64, "closes that may share one transaction (-close-group of the serving process; 1: each alone)")
	fs.IntVar(&o.pgWriters, "pg-writers", models.DefaultWriters, "PostgreSQL: write transactions each process runs at once (its -pg-writers)")
	fs.BoolVar(&o.json, "json", false, "print only the JSON line")
	fs.BoolVar(&o.ceiling, "ceiling", false, "also time the bare release transaction on the same database, 1 and 100 per commit")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write the CPU profile of the serving process (burst, steady: serve; backlog, timeout: worker) to this file")
	fs.BoolVar(&o.keep, "keep", false, "keep the temp dir (SQLite file, process logs) and say where it is")
	fs.DurationVar(&o.webhookDelay, "webhook-delay", 0,
		"run a webhook subscriber to every event that answers 200 after this long (0: none), to show a slow subscriber does not slow releases")
	fs.BoolVar(&o.pages, "pages", true, "while the load runs, time the dashboard's main pages as a signed-in admin, one every 250 ms")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			var b strings.Builder
			b.WriteString(benchUsage)
			fs.SetOutput(&b)
			fs.PrintDefaults()
			return o, fmt.Errorf("%w\n%s", err, b.String())
		}
		return o, fmt.Errorf("bench: %w", err)
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("bench: unexpected argument %q", fs.Arg(0))
	}
	switch o.mode {
	case benchBurst, benchSteady, benchBacklog, benchTimeout:
	default:
		return o, fmt.Errorf("bench: -mode must be burst, steady, backlog or timeout, got %q", o.mode)
	}
	if o.mode == benchSteady {
		if o.rate <= 0 || o.duration <= 0 {
			return o, errors.New("bench: steady needs a -rate and a -duration above zero")
		}
		o.orders = int(math.Round(o.rate * o.duration.Seconds()))
	}
	switch {
	case o.orders < 1 || o.orders > 1_000_000:
		return o, fmt.Errorf("bench: -orders must be from 1 to 1000000, got %d", o.orders)
	case o.pools < 1 || o.pools > 64:
		return o, fmt.Errorf("bench: -pools must be from 1 to 64, got %d", o.pools)
	case o.batch < 1 || o.batch > 1000:
		return o, fmt.Errorf("bench: -batch must be from 1 to 1000, got %d", o.batch)
	case o.clients < 1 || o.clients > 1000:
		return o, fmt.Errorf("bench: -clients must be from 1 to 1000, got %d", o.clients)
	case o.closeGroup < 1 || o.closeGroup > 1000:
		return o, fmt.Errorf("bench: -close-group must be from 1 to 1000, got %d", o.closeGroup)
	case o.pgWriters < 1 || o.pgWriters > 64:
		return o, fmt.Errorf("bench: -pg-writers must be from 1 to 64, got %d", o.pgWriters)
	case o.webhookDelay < 0 || o.webhookDelay > time.Minute:
		return o, fmt.Errorf("bench: -webhook-delay must be from 0 to 1m, got %s", o.webhookDelay)
	}
	for _, part := range strings.Split(mix, ",") {
		r, err := models.ParseResourceType(strings.TrimSpace(part))
		if err != nil {
			return o, fmt.Errorf("bench: -mix: %w", err)
		}
		if !slices.Contains(o.mix, r) {
			o.mix = append(o.mix, r)
		}
	}
	return o, nil
}

func resourceList() string {
	var names []string
	for _, r := range models.ResourceTypes {
		names = append(names, string(r))
	}
	return strings.Join(names, ",")
}

// benchResult is what one run measured; its JSON is the one line printed.
type benchResult struct {
	Mode    string `json:"mode"`
	Engine  string `json:"engine"`
	Orders  int    `json:"orders"`
	Tasks   int    `json:"tasks"`
	Mix     string `json:"mix"`
	Pools   int    `json:"pools"`
	Batch   int    `json:"batch"`
	Clients int    `json:"clients"`
	// CloseGroup is -close-group.
	CloseGroup int `json:"close_group"`
	// PGWriters is -pg-writers, on PostgreSQL.
	PGWriters int    `json:"pg_writers,omitempty"`
	LoadAvg   string `json:"loadavg"`

	PlacesPerS float64 `json:"places_per_s"`
	ClosesPerS float64 `json:"closes_per_s"`
	// ReleasesPerS counts from the first close (backlog: from the worker's
	// start) to the last release.
	ReleasesPerS float64 `json:"releases_per_s"`
	// CloseCPUMs is the serving process's CPU time (user and system) from
	// the first close to the last answer, per close (burst and steady:
	// the releases the worker made meanwhile are in it); OrderCPUMs from
	// the first close to the last release, per order: a close and its
	// releases.
	CloseCPUMs float64 `json:"close_cpu_ms"`
	OrderCPUMs float64 `json:"order_cpu_ms"`
	// ClosesPerCommit is how many closes the API's group transactions
	// carried on average (the serving process's unhold_closes_grouped_total
	// over unhold_close_groups_total); 0 when closes went alone.
	ClosesPerCommit          float64 `json:"closes_per_commit"`
	ReleasesWhileClosingPerS float64 `json:"releases_while_closing_per_s"`
	// LastReleaseAfterLastCloseMs is how long the last release came after
	// the last close.
	LastReleaseAfterLastCloseMs float64 `json:"last_release_after_last_close_ms"`
	P50Ms                       float64 `json:"p50_ms"`
	P95Ms                       float64 `json:"p95_ms"`
	P99Ms                       float64 `json:"p99_ms"`
	MaxMs                       float64 `json:"max_ms"`
	// PeakRSSMB is the largest VmHWM of the serving processes, by process
	// in PeakRSSByProcessMB.
	PeakRSSMB          float64            `json:"peak_rss_mb"`
	PeakRSSByProcessMB map[string]float64 `json:"peak_rss_by_process_mb"`
	// Dashboard pages, fetched one at a time from the first close until
	// every release is done. PagesFetched counts the answers of 200, which
	// the times are of; PageErrors the rest (another status, a timeout), the
	// first of which is PageFirstError. PageSlowest is the path of the
	// slowest page, PageMaxMs its time.
	PagesFetched int     `json:"pages_fetched"`
	PageErrors   int     `json:"page_errors"`
	PageP50Ms    float64 `json:"page_p50_ms"`
	PageP95Ms    float64 `json:"page_p95_ms"`
	PageP99Ms    float64 `json:"page_p99_ms"`
	PageMaxMs    float64 `json:"page_max_ms"`
	PageSlowest  string  `json:"page_slowest"`
	// PageMaxByPathMs is each page's slowest fetch.
	PageMaxByPathMs map[string]float64 `json:"page_max_by_path_ms,omitempty"`
	PageFirstError  string             `json:"page_first_error,omitempty"`

	Retried         int64    `json:"tasks_retried"`
	InvariantsOK    bool     `json:"invariants_ok"`
	InvariantErrors []string `json:"invariant_errors,omitempty"`

	// WebhookDelayMs is -webhook-delay; WebhooksReceived how many events
	// its subscriber was sent and answered by the end of the run.
	WebhookDelayMs   float64 `json:"webhook_delay_ms,omitempty"`
	WebhooksReceived int64   `json:"webhooks_received,omitempty"`

	CeilingOnePerCommitPerS     float64 `json:"ceiling_1_per_commit_per_s,omitempty"`
	CeilingHundredPerCommitPerS float64 `json:"ceiling_100_per_commit_per_s,omitempty"`
}

// bench runs unhold bench.
func bench(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	opt, err := parseBenchFlags(args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stdout, strings.TrimPrefix(err.Error(), flag.ErrHelp.Error()+"\n"))
		}
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("bench: find this binary: %w", err)
	}
	b := &benchRun{opt: opt, exe: exe, log: newLogger(config.LogFormatText, stderr), progress: stderr}
	if opt.json {
		b.progress = io.Discard
	}
	res, err := b.run(ctx, getenv("UNHOLD_DB"))
	if err != nil {
		return err
	}
	if !opt.json {
		printBenchTable(stdout, res)
	}
	line, err := json.Marshal(res)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, string(line))
	if !res.InvariantsOK {
		return fmt.Errorf("bench: invariants broken: %s", strings.Join(res.InvariantErrors, "; "))
	}
	return nil
}

// benchRun is one run of the bench: its temp dir, database, processes and
// API client.
type benchRun struct {
	opt      benchOptions
	exe      string
	log      *slog.Logger
	progress io.Writer

	dir    string
	dsn    string
	store  *models.Store
	token  string
	client *http.Client
	base   string
	// adminPassword signs the page prober in as benchAdmin.
	adminPassword string

	mu       sync.Mutex
	children []*benchChild
	rss      map[string]float64
}

func (b *benchRun) say(format string, a ...any) {
	fmt.Fprintf(b.progress, "bench: "+format+"\n", a...)
}

func (b *benchRun) run(ctx context.Context, pgURL string) (res benchResult, err error) {
	opt := b.opt
	res = benchResult{Mode: opt.mode, Orders: opt.orders, Pools: opt.pools, Batch: opt.batch, Clients: opt.clients, CloseGroup: opt.closeGroup,
		LoadAvg: loadAvg(), PeakRSSByProcessMB: map[string]float64{}}
	for _, r := range opt.mix {
		res.Mix += "," + string(r)
	}
	res.Mix = strings.TrimPrefix(res.Mix, ",")
	b.rss = res.PeakRSSByProcessMB

	if b.dir, err = os.MkdirTemp("", "unhold-bench-"); err != nil {
		return res, err
	}
	if opt.keep {
		b.say("keeping %s", b.dir)
	} else {
		defer os.RemoveAll(b.dir)
	}
	b.dsn = filepath.Join(b.dir, "bench.db")
	res.Engine = string(models.SQLite)
	if models.IsPostgres(pgURL) {
		res.Engine = string(models.Postgres)
		res.PGWriters = opt.pgWriters
		drop, err := b.freshSchema(ctx, pgURL)
		if err != nil {
			return res, err
		}
		defer drop()
	}
	quiet := slog.New(slog.DiscardHandler)
	if b.store, err = models.Open(ctx, b.dsn, models.Options{Logger: quiet}); err != nil {
		return res, err
	}
	defer b.store.Close()
	if _, err := b.store.Migrate(ctx); err != nil {
		return res, err
	}
	defer b.stopAll()

	coupons, err := b.fillShop(ctx)
	if err != nil {
		return res, fmt.Errorf("bench: fill the shop: %w", err)
	}
	var hooks *benchSubscriber
	if opt.webhookDelay > 0 {
		if hooks, err = startBenchSubscriber(opt.webhookDelay); err != nil {
			return res, fmt.Errorf("bench: webhook subscriber: %w", err)
		}
		defer hooks.Close()
		if _, _, err := b.store.CreateWebhook(ctx, models.NewWebhook{URL: hooks.url}, "bench"); err != nil {
			return res, fmt.Errorf("bench: subscribe: %w", err)
		}
		res.WebhookDelayMs = float64(opt.webhookDelay.Milliseconds())
		b.say("a webhook subscriber to every event answers after %s", opt.webhookDelay)
	}
	front := "web"
	if opt.mode == benchBurst || opt.mode == benchSteady {
		front = "serve"
	}
	// The profiled process is the one releasing: serve, or the worker.
	profile := func(name string) []string {
		if opt.cpuProfile == "" || (name == "web") {
			return nil
		}
		return []string{"-cpuprofile", opt.cpuProfile}
	}
	web, err := b.start(ctx, front, profile(front)...)
	if err != nil {
		return res, err
	}
	b.base = web.url
	b.client = &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: opt.clients}}

	payTimeout := 0
	if opt.mode == benchTimeout {
		payTimeout = 1
	}
	b.say("placing %d orders holding %s with %d clients", opt.orders, res.Mix, opt.clients)
	start := time.Now()
	if err := b.each(ctx, opt.clients, opt.orders, nil, func(i int) error { return b.place(ctx, i, coupons, payTimeout) }); err != nil {
		return res, fmt.Errorf("bench: place: %w", err)
	}
	res.PlacesPerS = float64(opt.orders) / time.Since(start).Seconds()

	var releaseFrom time.Time // when releasing could start
	var cpu0 time.Duration    // the serving process's CPU time at the first close (burst, steady)
	var pages *pageProber
	if opt.pages {
		if pages, err = b.newPageProber(ctx); err != nil {
			return res, err
		}
		defer pages.halt()
		b.say("timing %d dashboard pages in turn, one every %s", len(pages.paths), pageEvery)
		if opt.mode != benchTimeout {
			pages.start(ctx)
		}
	}
	switch opt.mode {
	case benchBurst, benchSteady:
		var pace func(i int) time.Time
		if opt.mode == benchSteady {
			b.say("closing %.0f orders a second for %s", opt.rate, opt.duration)
			t0 := time.Now()
			pace = func(i int) time.Time { return t0.Add(time.Duration(float64(i) / opt.rate * float64(time.Second))) }
		} else {
			b.say("closing %d orders as fast as the API takes them", opt.orders)
		}
		start := time.Now()
		cpu0 = cpuTime(web.cmd.Process.Pid)
		if err := b.each(ctx, opt.clients, opt.orders, pace, func(i int) error { return b.close(ctx, i) }); err != nil {
			return res, fmt.Errorf("bench: close: %w", err)
		}
		res.ClosesPerS = float64(opt.orders) / time.Since(start).Seconds()
		res.CloseCPUMs = perOrderMs(cpuTime(web.cmd.Process.Pid)-cpu0, opt.orders)
	case benchBacklog:
		b.say("closing %d orders with no worker running", opt.orders)
		start := time.Now()
		if err := b.each(ctx, opt.clients, opt.orders, nil, func(i int) error { return b.close(ctx, i) }); err != nil {
			return res, fmt.Errorf("bench: close: %w", err)
		}
		res.ClosesPerS = float64(opt.orders) / time.Since(start).Seconds()
	case benchTimeout:
		// Every order's deadline is 1 s after it was placed.
		time.Sleep(1500 * time.Millisecond)
	}
	if opt.mode == benchBacklog || opt.mode == benchTimeout {
		var args []string
		if opt.mode == benchTimeout {
			args = append(args, "-timeout-close-every", "1s")
		}
		b.say("starting unhold worker -pools %d", opt.pools)
		releaseFrom = time.Now()
		if _, err := b.start(ctx, "worker", append(args, profile("worker")...)...); err != nil {
			return res, err
		}
		if opt.mode == benchTimeout && pages != nil {
			pages.start(ctx) // the worker's timeout job makes the first close
		}
	}
	if err := b.waitReleased(ctx); err != nil {
		return res, err
	}
	if cpu0 > 0 {
		res.OrderCPUMs = perOrderMs(cpuTime(web.cmd.Process.Pid)-cpu0, opt.orders)
	}
	res.ClosesPerCommit = b.closesPerCommit(ctx)
	if pages != nil {
		pages.finish(&res)
	}
	b.stopAll()
	if hooks != nil {
		res.WebhooksReceived = hooks.got.Load()
	}
	if err := b.measure(ctx, &res, releaseFrom); err != nil {
		return res, err
	}
	res.InvariantErrors = b.checkInvariants(ctx, len(opt.mix))
	res.InvariantsOK = len(res.InvariantErrors) == 0
	for _, mb := range res.PeakRSSByProcessMB {
		res.PeakRSSMB = max(res.PeakRSSMB, mb)
	}
	if opt.ceiling {
		b.say("timing the bare release transaction")
		if res.CeilingOnePerCommitPerS, err = b.ceiling(ctx, 1); err != nil {
			return res, err
		}
		if res.CeilingHundredPerCommitPerS, err = b.ceiling(ctx, 100); err != nil {
			return res, err
		}
	}
	return res, nil
}

// freshSchema makes a schema of its own in the PostgreSQL at pgURL, points
// b.dsn at it and returns what drops it.
func (b *benchRun) freshSchema(ctx context.Context, pgURL string) (func(), error) {
	admin, err := models.Open(ctx, pgURL, models.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, err
	}
	rnd := make([]byte, 6)
	_, _ = rand.Read(rnd)
	schema := "bench_" + hex.EncodeToString(rnd)
	if err := admin.W.WithContext(ctx).Exec("CREATE SCHEMA " + schema).Error; err != nil {
		admin.Close()
		return nil, fmt.Errorf("bench: create schema: %w", err)
	}
	u, err := url.Parse(pgURL)
	if err != nil {
		admin.Close()
		return nil, err
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	b.dsn = u.String()
	b.say("PostgreSQL schema %s", schema)
	return func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if err := admin.W.WithContext(dctx).Exec("DROP SCHEMA " + schema + " CASCADE").Error; err != nil {
			b.log.Error("drop the bench schema", slog.String("schema", schema), slog.Any("err", err))
		}
		admin.Close()
	}, nil
}

// fillShop makes what the orders hold: benchSKUs SKUs, benchSKUs users
// with balance and points, an activity, and, for coupons, one coupon per
// order. It returns the coupons' ids by order.
func (b *benchRun) fillShop(ctx context.Context) ([]int64, error) {
	s, n := b.store, int64(b.opt.orders)
	per := n/benchSKUs + 1
	var coupons []int64
	for _, r := range b.opt.mix {
		switch r {
		case models.ResInventory:
			for k := range benchSKUs {
				if _, err := s.SetStock(ctx, benchSKU(k), per, 0, "bench"); err != nil {
					return nil, err
				}
			}
		case models.ResBalance, models.ResPoints:
			asset := models.AssetBalance
			if r == models.ResPoints {
				asset = models.AssetPoints
			}
			for k := range benchSKUs {
				if _, err := s.Credit(ctx, benchUser(k), asset, per, "bench"); err != nil {
					return nil, err
				}
			}
		case models.ResQuota:
			if _, err := s.SetActivity(ctx, "bench-act", n, "bench"); err != nil {
				return nil, err
			}
		case models.ResCoupon:
			b.say("issuing %d coupons", n)
			coupons = make([]int64, n)
			for i := range coupons {
				c, err := s.CreateCoupon(ctx, benchUser(i%benchSKUs), models.CouponPlatform, s.Now().Add(30*24*time.Hour), "bench")
				if err != nil {
					return nil, err
				}
				coupons[i] = c.ID
			}
		case models.ResSlot:
			b.say("opening %d slots", n)
			for i := range n {
				if _, _, err := s.PutSlot(ctx, benchSlot(int(i)), "bench"); err != nil {
					return nil, err
				}
			}
		}
	}
	a := auth.New(s, auth.Options{Logger: b.log})
	_, secret, err := a.CreateAPIToken(ctx, "bench", auth.RoleOperator, "bench")
	if err != nil {
		return nil, err
	}
	b.token = secret
	if b.opt.pages {
		b.adminPassword = auth.NewPassword()
		if _, err := a.CreateUser(ctx, benchAdmin, auth.RoleAdmin, b.adminPassword, "bench"); err != nil {
			return nil, err
		}
	}
	return coupons, nil
}

func benchSKU(k int) string   { return fmt.Sprintf("bench-sku-%03d", k) }
func benchUser(k int) string  { return fmt.Sprintf("bench-u-%03d", k) }
func benchSlot(i int) string  { return fmt.Sprintf("bench-slot-%d", i) }
func benchOrder(i int) string { return fmt.Sprintf("bench-%07d", i) }

// benchChild is one unhold process the bench started.
type benchChild struct {
	name string
	cmd  *exec.Cmd
	url  string // web and serve: where the API answers
	done chan struct{}
}

var servingURL = regexp.MustCompile(`serving on (https?://\S+)`)

// start runs "unhold <name>" on the bench database and waits for its first
// line on stdout, which it prints once it serves.
func (b *benchRun) start(ctx context.Context, name string, extra ...string) (*benchChild, error) {
	args := []string{name, "-db", b.dsn, "-log-format", "json", "-worker-id", "bench-" + name,
		"-pools", strconv.Itoa(b.opt.pools), "-worker-batch", strconv.Itoa(b.opt.batch), "-close-group", strconv.Itoa(b.opt.closeGroup),
		"-pg-writers", strconv.Itoa(b.opt.pgWriters)}
	if name != "worker" {
		args = append(args, "-addr", "127.0.0.1:0")
	}
	args = append(args, extra...)
	logf, err := os.Create(filepath.Join(b.dir, name+".log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(b.exe, args...)
	cmd.Stderr = logf
	out, err := cmd.StdoutPipe()
	if err != nil {
		logf.Close()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("bench: start unhold %s: %w", name, err)
	}
	c := &benchChild{name: name, cmd: cmd, done: make(chan struct{})}
	b.mu.Lock()
	b.children = append(b.children, c)
	b.mu.Unlock()
	first := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			select {
			case first <- sc.Text():
			default:
			}
		}
		close(first)
		_ = cmd.Wait()
		logf.Close()
		close(c.done)
	}()
	select {
	case line, ok := <-first:
		if !ok {
			return nil, fmt.Errorf("bench: unhold %s exited at start; see %s", name, logf.Name())
		}
		if name != "worker" {
			m := servingURL.FindStringSubmatch(line)
			if m == nil {
				return nil, fmt.Errorf("bench: unhold %s said %q", name, line)
			}
			c.url = m[1]
		}
	case <-time.After(2 * time.Minute):
		return nil, fmt.Errorf("bench: unhold %s did not start", name)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return c, nil
}

// stopAll notes each running child's peak RSS, then stops it with SIGTERM
// (SIGKILL after a minute) and waits for it.
func (b *benchRun) stopAll() {
	b.mu.Lock()
	children := b.children
	b.children = nil
	b.mu.Unlock()
	for _, c := range children {
		if mb, ok := peakRSS(c.cmd.Process.Pid); ok {
			b.rss[c.name] = mb
		}
		_ = c.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, c := range children {
		select {
		case <-c.done:
		case <-time.After(time.Minute):
			b.log.Error("unhold did not stop on SIGTERM: killing it", slog.String("process", c.name))
			_ = c.cmd.Process.Kill()
			<-c.done
		}
		if code := c.cmd.ProcessState.ExitCode(); code != 0 {
			b.log.Error("unhold exited with an error", slog.String("process", c.name), slog.Int("code", code),
				slog.String("log", filepath.Join(b.dir, c.name+".log")))
		}
	}
}

var closeGroupCounter = regexp.MustCompile(`(?m)^unhold_(close_groups|closes_grouped)_total (\S+)$`)

// closesPerCommit reads the serving process's close group counters from
// its /metrics.
func (b *benchRun) closesPerCommit(ctx context.Context) float64 {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.base+"/metrics", nil)
	if err != nil {
		return 0
	}
	res, err := b.client.Do(req)
	if err != nil {
		return 0
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 4<<20))
	if err != nil {
		return 0
	}
	n := map[string]float64{}
	for _, m := range closeGroupCounter.FindAllStringSubmatch(string(body), -1) {
		n[m[1]], _ = strconv.ParseFloat(m[2], 64)
	}
	if n["close_groups"] == 0 {
		return 0
	}
	return math.Round(n["closes_grouped"]/n["close_groups"]*10) / 10
}

// cpuTime reads the CPU time (user and system) a process has used so far;
// zero when it cannot.
func cpuTime(pid int) time.Duration {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name, in parentheses, may hold spaces; utime and stime
	// are the 12th and 13th fields after it, in clock ticks (USER_HZ, 100
	// on Linux).
	_, rest, ok := strings.Cut(string(stat), ") ")
	f := strings.Fields(rest)
	if !ok || len(f) < 13 {
		return 0
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

func perOrderMs(d time.Duration, orders int) float64 {
	if orders <= 0 || d <= 0 {
		return 0
	}
	return math.Round(float64(d)/float64(time.Millisecond)/float64(orders)*1000) / 1000
}

// peakRSS reads a process's peak resident set (VmHWM) in MB.
func peakRSS(pid int) (float64, bool) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
			return math.Round(kb/1024*10) / 10, err == nil
		}
	}
	return 0, false
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// each calls fn(i) for i in [0, n) from clients goroutines; pace, when set,
// says when call i may start. It stops at the first error.
func (b *benchRun) each(parent context.Context, clients, n int, pace func(i int) time.Time, fn func(i int) error) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if pace != nil {
					if d := time.Until(pace(i)); d > 0 {
						select {
						case <-time.After(d):
						case <-ctx.Done():
							return
						}
					}
				}
				if err := fn(i); err != nil {
					once.Do(func() { first = err; cancel() })
					return
				}
			}
		}()
	}
	wg.Wait()
	if first != nil {
		return first
	}
	return parent.Err()
}

// place puts order i through the API, holding one of each resource in the mix.
func (b *benchRun) place(ctx context.Context, i int, coupons []int64, payTimeoutS int) error {
	body := map[string]any{"order_no": benchOrder(i), "user_id": benchUser(i % benchSKUs)}
	var freeze []map[string]any
	for _, r := range b.opt.mix {
		switch r {
		case models.ResInventory:
			body["items"] = []map[string]any{{"sku_id": benchSKU(i % benchSKUs), "qty": 1}}
		case models.ResCoupon:
			body["coupon_ids"] = []int64{coupons[i]}
		case models.ResBalance:
			freeze = append(freeze, map[string]any{"asset": string(models.AssetBalance), "amount": 1})
		case models.ResPoints:
			freeze = append(freeze, map[string]any{"asset": string(models.AssetPoints), "amount": 1})
		case models.ResQuota:
			body["activity_id"] = "bench-act"
		case models.ResSlot:
			body["slot_id"] = benchSlot(i)
		}
	}
	if freeze != nil {
		body["freeze"] = freeze
	}
	if payTimeoutS > 0 {
		body["pay_timeout_s"] = payTimeoutS
	}
	return b.post(ctx, "/api/v1/orders", body, http.StatusCreated)
}

func (b *benchRun) close(ctx context.Context, i int) error {
	return b.post(ctx, "/api/v1/orders/"+benchOrder(i)+"/close", map[string]string{"reason": string(models.TriggerUserCancel)}, http.StatusOK)
}

func (b *benchRun) post(ctx context.Context, path string, body any, want int) error {
	js, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.base+path, bytes.NewReader(js))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+b.token)
	res, err := b.client.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
	if res.StatusCode != want {
		return fmt.Errorf("POST %s = %d, want %d: %s", path, res.StatusCode, want, bytes.TrimSpace(answer))
	}
	return nil
}

// waitReleased waits until every order is closed and every task DONE. It
// gives up when nothing moves for benchStall, or when a task goes MANUAL.
func (b *benchRun) waitReleased(ctx context.Context) error {
	last, lastMove := int64(-1), time.Now()
	for {
		var open, pending, manual int64
		r := b.store.R.WithContext(ctx)
		if err := r.Model(&models.ReleaseTask{}).Where("status <> ?", models.TaskDone).Count(&open).Error; err != nil {
			return err
		}
		if err := r.Model(&models.ReleaseTask{}).Where("status = ?", models.TaskManual).Count(&manual).Error; err != nil {
			return err
		}
		if err := r.Model(&models.Order{}).Where("status = ?", models.OrderPending).Count(&pending).Error; err != nil {
			return err
		}
		if manual > 0 {
			return fmt.Errorf("bench: %d release tasks went MANUAL; see the logs in %s (run with -keep)", manual, b.dir)
		}
		if open+pending == 0 {
			return nil
		}
		if open+pending != last {
			last, lastMove = open+pending, time.Now()
		} else if time.Since(lastMove) > benchStall {
			return fmt.Errorf("bench: %d orders still open and %d tasks not done, and nothing moved for %s", pending, open, benchStall)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// measure reads each task's close (its creation, in the close's
// transaction) and done timestamps.
func (b *benchRun) measure(ctx context.Context, res *benchResult, releaseFrom time.Time) error {
	var rows []struct {
		CreatedAt time.Time
		DoneAt    time.Time
	}
	if err := b.store.R.WithContext(ctx).Model(&models.ReleaseTask{}).Select("created_at, done_at").Scan(&rows).Error; err != nil {
		return fmt.Errorf("bench: read the tasks: %w", err)
	}
	if len(rows) == 0 {
		return errors.New("bench: no release task was written")
	}
	res.Tasks = len(rows)
	var firstClose, lastClose, lastDone time.Time
	lat := make([]float64, len(rows))
	for i, r := range rows {
		if firstClose.IsZero() || r.CreatedAt.Before(firstClose) {
			firstClose = r.CreatedAt
		}
		if r.CreatedAt.After(lastClose) {
			lastClose = r.CreatedAt
		}
		if r.DoneAt.After(lastDone) {
			lastDone = r.DoneAt
		}
		lat[i] = float64(r.DoneAt.Sub(r.CreatedAt).Microseconds()) / 1000
	}
	var whileClosing int
	for _, r := range rows {
		if !r.DoneAt.After(lastClose) {
			whileClosing++
		}
	}
	slices.Sort(lat)
	res.P50Ms, res.P95Ms, res.P99Ms, res.MaxMs = percentile(lat, 0.50), percentile(lat, 0.95), percentile(lat, 0.99), round1(lat[len(lat)-1])
	if releaseFrom.IsZero() {
		releaseFrom = firstClose
	}
	if d := lastDone.Sub(releaseFrom).Seconds(); d > 0 {
		res.ReleasesPerS = round1(float64(len(rows)) / d)
	}
	if d := lastClose.Sub(firstClose).Seconds(); d > 0 && b.opt.mode != benchBacklog {
		res.ReleasesWhileClosingPerS = round1(float64(whileClosing) / d)
	}
	if b.opt.mode == benchTimeout && lastClose.After(firstClose) {
		res.ClosesPerS = float64(b.opt.orders) / lastClose.Sub(firstClose).Seconds()
	}
	res.ClosesPerS, res.PlacesPerS = round1(res.ClosesPerS), round1(res.PlacesPerS)
	res.LastReleaseAfterLastCloseMs = round1(float64(lastDone.Sub(lastClose).Microseconds()) / 1000)
	return b.store.R.WithContext(ctx).Model(&models.ReleaseTask{}).Where("failures > 0").Count(&res.Retried).Error
}

func round1(f float64) float64 { return math.Round(f*10) / 10 }

// checkInvariants checks the quiet shop after the run: reconciliation finds
// no difference, every order is CLOSED with each hold fully released by
// exactly one DONE task, and all the stock is back. It returns what failed.
func (b *benchRun) checkInvariants(ctx context.Context, perOrder int) []string {
	var bad []string
	fail := func(format string, a ...any) { bad = append(bad, fmt.Sprintf(format, a...)) }
	s, n := b.store, int64(b.opt.orders)
	diffs, err := s.Reconcile(ctx)
	if err != nil {
		fail("reconcile: %v", err)
	} else if len(diffs) > 0 {
		fail("reconciliation found %d differences, first %+v", len(diffs), diffs[0])
	}
	count := func(what string, q *gorm.DB, want int64) {
		var got int64
		if err := q.Count(&got).Error; err != nil {
			fail("%s: %v", what, err)
		} else if got != want {
			fail("%s: %d, want %d", what, got, want)
		}
	}
	r := s.R.WithContext(ctx)
	count("orders", r.Model(&models.Order{}), n)
	count("orders not CLOSED", r.Model(&models.Order{}).Where("status <> ?", models.OrderClosed), 0)
	count("release tasks", r.Model(&models.ReleaseTask{}), n*int64(perOrder))
	count("release tasks not DONE", r.Model(&models.ReleaseTask{}).Where("status <> ?", models.TaskDone), 0)
	count("tasks released twice (more than one DONE task per hold)",
		r.Table("release_tasks").Where("status = ?", models.TaskDone).Group("order_no, resource_type, biz_key").Having("COUNT(*) > 1"), 0)
	count("holds not fully released", r.Model(&models.Hold{}).Where("released <> qty OR deducted <> 0"), 0)
	if slices.Contains(b.opt.mix, models.ResInventory) {
		var stock struct{ Available, Locked int64 }
		if err := r.Model(&models.SKU{}).Select("COALESCE(SUM(available), 0) AS available, COALESCE(SUM(locked), 0) AS locked").
			Scan(&stock).Error; err != nil {
			fail("stock: %v", err)
		} else if want := (n/benchSKUs + 1) * benchSKUs; stock.Available != want || stock.Locked != 0 {
			fail("stock after the run: %d available, %d locked; want %d and 0", stock.Available, stock.Locked, want)
		}
	}
	return bad
}

// ceiling times the bare release transaction on the bench database, per
// commits of per releases: one ledger insert and one guarded update each,
// on tables of its own, for about three seconds. It returns releases/s.
func (b *benchRun) ceiling(ctx context.Context, per int) (float64, error) {
	db := b.store.W.WithContext(ctx)
	id := "INTEGER PRIMARY KEY"
	if b.store.Dialect == models.Postgres {
		id = "BIGSERIAL PRIMARY KEY"
	}
	for _, q := range []string{
		"DROP TABLE IF EXISTS bench_ceiling_flows",
		"DROP TABLE IF EXISTS bench_ceiling_stock",
		"CREATE TABLE bench_ceiling_stock (sku_id VARCHAR(64) PRIMARY KEY, available BIGINT NOT NULL, locked BIGINT NOT NULL)",
		"CREATE TABLE bench_ceiling_flows (id " + id + `, sku_id VARCHAR(64) NOT NULL, biz_no VARCHAR(64) NOT NULL,
			flow_type VARCHAR(16) NOT NULL, qty BIGINT NOT NULL, created_at TIMESTAMP NOT NULL, UNIQUE (biz_no, sku_id, flow_type))`,
	} {
		if err := db.Exec(q).Error; err != nil {
			return 0, fmt.Errorf("bench: ceiling: %w", err)
		}
	}
	for k := range benchSKUs {
		if err := db.Exec("INSERT INTO bench_ceiling_stock VALUES (?, 0, 1000000000)", benchSKU(k)).Error; err != nil {
			return 0, fmt.Errorf("bench: ceiling: %w", err)
		}
	}
	release := func(tx *gorm.DB, i int) error {
		sku := benchSKU(i % benchSKUs)
		if err := tx.Exec("INSERT INTO bench_ceiling_flows (sku_id, biz_no, flow_type, qty, created_at) VALUES (?, ?, 'RELEASE', 1, ?)",
			sku, benchOrder(i), time.Now().UTC()).Error; err != nil {
			return err
		}
		res := tx.Exec("UPDATE bench_ceiling_stock SET available = available + 1, locked = locked - 1 WHERE sku_id = ? AND locked >= 1", sku)
		if res.Error == nil && res.RowsAffected != 1 {
			return errors.New("guarded update changed no row")
		}
		return res.Error
	}
	start, n := time.Now(), 0
	for time.Since(start) < 3*time.Second {
		err := db.Transaction(func(tx *gorm.DB) error {
			for range per {
				if err := release(tx, n); err != nil {
					return err
				}
				n++
			}
			return nil
		})
		if err != nil {
			return 0, fmt.Errorf("bench: ceiling: %w", err)
		}
	}
	rate := round1(float64(n) / time.Since(start).Seconds())
	for _, q := range []string{"DROP TABLE bench_ceiling_flows", "DROP TABLE bench_ceiling_stock"} {
		if err := db.Exec(q).Error; err != nil {
			return 0, fmt.Errorf("bench: ceiling: %w", err)
		}
	}
	return rate, nil
}

func printBenchTable(w io.Writer, r benchResult) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k string, v any) { fmt.Fprintf(tw, "%s\t%v\n", k, v) }
	row("mode", fmt.Sprintf("%s on %s, %d orders holding %s (%d tasks)", r.Mode, r.Engine, r.Orders, r.Mix, r.Tasks))
	workers := fmt.Sprintf("%d pool(s), batch %d; %d API clients; closes grouped up to %d", r.Pools, r.Batch, r.Clients, r.CloseGroup)
	if r.PGWriters > 0 {
		workers += fmt.Sprintf("; %d writers at once", r.PGWriters)
	}
	row("workers", workers)
	row("load average at start", r.LoadAvg)
	row("places/s", r.PlacesPerS)
	row("closes/s", r.ClosesPerS)
	if r.CloseCPUMs > 0 {
		row("serving CPU per close, ms (releases meanwhile in it)", r.CloseCPUMs)
		row("serving CPU per order, close and release, ms", r.OrderCPUMs)
		row("closes per commit", r.ClosesPerCommit)
	}
	row("releases/s", r.ReleasesPerS)
	row("releases/s while closing", r.ReleasesWhileClosingPerS)
	row("last release after last close", fmt.Sprintf("%.1f ms", r.LastReleaseAfterLastCloseMs))
	row("close→released p50 / p95 / p99 / max", fmt.Sprintf("%.1f / %.1f / %.1f / %.1f ms", r.P50Ms, r.P95Ms, r.P99Ms, r.MaxMs))
	var procs []string
	for name, mb := range r.PeakRSSByProcessMB {
		procs = append(procs, fmt.Sprintf("%s %.1f MB", name, mb))
	}
	slices.Sort(procs)
	row("peak RSS", strings.Join(procs, ", "))
	if r.PagesFetched+r.PageErrors == 0 {
		row("dashboard pages", "off")
	} else {
		row("dashboard pages", fmt.Sprintf("%d fetched, %d errors", r.PagesFetched, r.PageErrors))
		row("page p50 / p95 / p99 / max", fmt.Sprintf("%.1f / %.1f / %.1f / %.1f ms", r.PageP50Ms, r.PageP95Ms, r.PageP99Ms, r.PageMaxMs))
		row("slowest pages", slowestPages(r.PageMaxByPathMs, 3))
		if r.PageFirstError != "" {
			row("first page error", r.PageFirstError)
		}
	}
	if r.WebhookDelayMs > 0 {
		row("webhook subscriber", fmt.Sprintf("answers after %.0f ms; %d events answered", r.WebhookDelayMs, r.WebhooksReceived))
	}
	row("tasks retried", r.Retried)
	row("invariants ok", r.InvariantsOK)
	if r.CeilingOnePerCommitPerS > 0 {
		row("ceiling, 1 release per commit", fmt.Sprintf("%.0f/s (unhold: %.0f/s)", r.CeilingOnePerCommitPerS, r.ReleasesPerS))
		row("ceiling, 100 releases per commit", fmt.Sprintf("%.0f/s", r.CeilingHundredPerCommitPerS))
	}
	tw.Flush()
}
