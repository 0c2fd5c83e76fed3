package models

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"gorm.io/gorm"

	"unhold/remote"
)

// RemoteType is a resource type whose holds another team's service keeps
// (docs/remote-resources.md): its name, its label, and the client of its
// service.
type RemoteType struct {
	Type   ResourceType
	Label  Label
	Client *remote.Client
}

// KindRemote holds are kept by another service: unhold calls it to lock,
// deduct and release, and keeps its own ledger of the calls.
const KindRemote ResourceKind = "remote"

// remoteCalls bounds the calls one batch of tasks, one placement or one
// reconciliation has in flight at once.
const remoteCalls = 8

// answerSent is the answer of a LOCK row: it is written with the order's
// hold, before the lock is sent.
const answerSent = "SENT"

// remoteResource is a type whose holds a service keeps. Its Apply only
// records: the service is called outside every transaction (call), and
// what it answered is written in the transaction that finishes the task,
// fenced by the task's lease. Its ledger, remote_flows, is unhold's record
// of the calls: a LOCK row when the hold is taken (before the lock is
// sent), a DEDUCT or RELEASE row when the service answered one.
type remoteResource struct {
	s      *Store
	typ    ResourceType
	client *remote.Client
}

// callAnswer is what the service answered a call that it did: now, or
// before (Duplicate: 409 ALREADY_DONE).
type callAnswer struct {
	Status    int
	Duplicate bool
}

func (a *callAnswer) String() string {
	if a.Duplicate {
		return strconv.Itoa(a.Status) + " " + remote.CodeAlreadyDone
	}
	return strconv.Itoa(a.Status)
}

func (r *remoteResource) Type() ResourceType { return r.typ }

func (r *remoteResource) Kind() ResourceKind { return KindRemote }

func (r *remoteResource) MaxQty() int64 { return MaxQty }

// UserKeyed is false: a key names the service's resource (a gift card),
// whose owner the service checks.
func (r *remoteResource) UserKeyed() bool { return false }

func (r *remoteResource) Side() string { return "" }

// Page is the key's page: its ledger of calls, who holds it, and what its
// service says when asked (its amounts live in the service).
func (r *remoteResource) Page(key string) string {
	return "/resources/" + string(r.typ) + "/" + url.PathEscape(key)
}

// Ledger is remote_flows narrowed to the type; a row's status is the
// service's answer. The type is a checked name (ValidTypeName), safe to
// write into SQL.
func (r *remoteResource) Ledger() LedgerSpec {
	return LedgerSpec{Table: "remote_flows", Key: "f.biz_key", Qty: "f.qty",
		Where: " AND f.resource_type = '" + string(r.typ) + "'", Status: "'' AS status_before, f.answer AS status_after"}
}

// ReleaseDelay is 0: a delay against scalpers is the service's to keep.
func (r *remoteResource) ReleaseDelay(*gorm.DB, string) (time.Duration, error) { return 0, nil }

// Apply records op in the type's ledger: a first cycle's LOCK with the
// order's hold, before it is sent; a DEDUCT or RELEASE once the service
// answered it (op.answer). A late payment's LOCK is refused: taking a
// hold back would need a call inside the payment's transaction
// (payLate sends such an order to REFUND_PENDING).
func (r *remoteResource) Apply(tx *gorm.DB, op Op) error {
	answer := answerSent
	switch {
	case op.Kind == FlowLock && op.Epoch == 0:
	case (op.Kind == FlowDeduct || op.Kind == FlowRelease) && op.answer != nil:
		answer = op.answer.String()
	case op.Kind == FlowLock:
		return fmt.Errorf("%w: a late payment does not take back %s %s: its service keeps it", errStateMismatch, r.typ, op.Key)
	default:
		return fmt.Errorf("%w: %s of %s %s is recorded only with its service's answer", errStateMismatch, op.Kind, r.typ, op.Key)
	}
	n, err := r.insert(tx, []Op{op}, []string{answer})
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("%w: %s %s %s of order %s", errDuplicate, r.typ, op.Key, op.Kind, op.OrderNo)
	}
	return nil
}

// insert writes the ledger rows of ops, with their answers, in one
// statement, leaving out a row the ledger has already, and returns how
// many it wrote.
func (r *remoteResource) insert(tx *gorm.DB, ops []Op, answers []string) (int64, error) {
	var q strings.Builder
	q.WriteString(`INSERT INTO remote_flows (order_no, resource_type, biz_key, type, epoch, trigger_type, qty, idempotency_key,
		answer, actor, created_at) VALUES `)
	args := make([]any, 0, 11*len(ops))
	for i, op := range ops {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString("(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
		args = append(args, op.OrderNo, r.typ, op.Key, op.Kind, op.Epoch, op.Trigger, op.Qty, r.idempotencyKey(op),
			answers[i], op.Actor, op.Now)
	}
	q.WriteString(" ON CONFLICT (order_no, resource_type, biz_key, type, epoch) DO NOTHING")
	res := tx.Exec(q.String(), args...)
	return res.RowsAffected, res.Error
}

// releaseMany records the answered RELEASEs of ops, one claim's tasks of
// the type, in one insert a hundred rows; releaseAll moves their hold rows.
// A row the ledger has already, or an op without its answer, returns
// errTryEach: each op is then recorded alone, where a repeat is told
// DUPLICATE.
func (r *remoteResource) releaseMany(tx *gorm.DB, ops []Op) error {
	for part := range slices.Chunk(ops, closeChunk) {
		answers := make([]string, len(part))
		for i, op := range part {
			if op.Kind != FlowRelease || op.answer == nil {
				return errTryEach
			}
			answers[i] = op.answer.String()
		}
		n, err := r.insert(tx, part, answers)
		if err != nil {
			return err
		}
		if n != int64(len(part)) {
			return errTryEach
		}
	}
	return nil
}

// remoteOps are the protocol's operations, by ledger row type.
var remoteOps = map[FlowType]remote.Op{FlowLock: remote.OpLock, FlowDeduct: remote.OpDeduct, FlowRelease: remote.OpRelease}

func (r *remoteResource) idempotencyKey(op Op) string {
	return remote.IdempotencyKey(op.OrderNo, string(r.typ), op.Key, remoteOps[op.Kind], op.Epoch)
}

// call makes op's call to the service, outside any transaction, and
// returns its answer; an error is a *remote.Error, whose class the retry
// schedule goes by.
func (r *remoteResource) call(ctx context.Context, op Op) (*callAnswer, error) {
	c := remote.Call{OrderNo: op.OrderNo, Key: op.Key, Qty: op.Qty, Epoch: op.Epoch, Trigger: string(op.Trigger)}
	var res remote.Result
	var err error
	switch op.Kind {
	case FlowLock:
		res, err = r.client.Lock(ctx, c)
	case FlowDeduct:
		res, err = r.client.Deduct(ctx, c)
	case FlowRelease:
		res, err = r.client.Release(ctx, c)
	default:
		return nil, fmt.Errorf("%w: %s is not a call of the remote protocol", errStateMismatch, op.Kind)
	}
	if err != nil {
		return nil, err
	}
	return &callAnswer{Status: res.Status, Duplicate: res.Duplicate}, nil
}

func (r *remoteResource) Flows(db *gorm.DB, orderNo string) ([]Flow, error) {
	var flows []Flow
	err := db.Raw(`SELECT id, order_no, biz_key, type, epoch, trigger_type AS trigger, qty, answer AS status_after, actor, created_at
		FROM remote_flows WHERE order_no = ? AND resource_type = ? ORDER BY id`, orderNo, r.typ).Scan(&flows).Error
	if err != nil {
		return nil, fmt.Errorf("%s flows of %s: %w", r.typ, orderNo, err)
	}
	for i := range flows {
		flows[i].ResourceType = r.typ
	}
	return flows, nil
}

// ledgerHeldSQL sums, per key of the type, what the ledger of calls says
// the service holds: what was locked less what was deducted or released.
const ledgerHeldSQL = `SELECT biz_key AS k, SUM(CASE type WHEN 'LOCK' THEN qty ELSE -qty END) AS held
	FROM remote_flows WHERE resource_type = ?`

// Reconcile is the check that needs no call: LEDGER_HELD, what the
// ledger of calls says the service holds of each key against what PENDING
// orders and unfinished tasks hold, both read in db's snapshot. What the
// service itself says (HELD) is asked after the snapshot, by
// reconcileServices.
func (r *remoteResource) Reconcile(ctx context.Context, db *gorm.DB) ([]Diff, error) {
	var rows []struct {
		K              string
		Held, Expected int64
	}
	err := db.WithContext(ctx).Raw(`SELECT l.k, l.held, COALESCE(p.q, 0) + COALESCE(t.q, 0) AS expected
		FROM (`+ledgerHeldSQL+` GROUP BY biz_key) l`+expectedJoins("l.k"),
		r.typ, r.typ, r.typ).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("reconcile %s: %w", r.typ, err)
	}
	var diffs []Diff
	for _, row := range rows {
		if row.Held != row.Expected {
			diffs = append(diffs, Diff{Resource: r.typ, Key: row.K, Check: CheckLedgerHeld, Expected: row.Expected, Actual: row.Held})
		}
	}
	return diffs, nil
}

// reconcileKeys is Reconcile for some keys, within the snapshot: the
// order chain asks no service while it draws.
func (r *remoteResource) reconcileKeys(db *gorm.DB, keys []string, pending, tasks map[ResourceKey]keyTotals) ([]Diff, error) {
	var rows []struct {
		K    string
		Held int64
	}
	if err := db.Raw(ledgerHeldSQL+" AND biz_key IN ? GROUP BY biz_key", r.typ, keys).Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("reconcile %s keys: %w", r.typ, err)
	}
	held := make(map[string]int64, len(rows))
	for _, row := range rows {
		held[row.K] = row.Held
	}
	var diffs []Diff
	for _, key := range keys {
		k := ResourceKey{r.typ, key}
		if want := pending[k].Q + tasks[k].Q; held[key] != want {
			diffs = append(diffs, Diff{Resource: r.typ, Key: key, Check: CheckLedgerHeld, Expected: want, Actual: held[key]})
		}
	}
	return diffs, nil
}

// keyView is one snapshot's view of a type's keys: what each is expected
// to hold, and which have a call that may be under way.
type keyView struct {
	expected map[string]int64
	busy     map[string]bool
}

// heldCheckQuiet is how long after its last ledger row a key stops being
// asked about: a key that no order holds and no task will touch is
// expected to hold nothing, and its service is not asked again and again
// on every run for every card ever used.
const heldCheckQuiet = 7 * 24 * time.Hour

// view reads, in one snapshot, what each key of the type is expected to
// hold (PENDING orders' open holds and unfinished tasks, as Reconcile
// reads them) — of the given keys, or, when keys is nil, of the keys in
// play: those with a ledger row in the last heldCheckQuiet, an open hold, an
// unfinished task or an unresolved HELD or UNCHECKED ticket — and which
// keys are busy, whose service may hold what unhold cannot know: a task of theirs has a
// call under way (leased) or made without an answer (tried before: its
// call may have been done), or releases an aborted placement's lock,
// which may never have arrived; or an order holding them was placed within
// the placement's bound on its lock calls (placeCallWindow).
func (r *remoteResource) view(ctx context.Context, keys []string) (keyView, error) {
	v := keyView{expected: map[string]int64{}, busy: map[string]bool{}}
	err := r.s.readSnapshot(ctx, func(tx *gorm.DB) error {
		if keys == nil {
			err := tx.Raw(`SELECT biz_key FROM remote_flows WHERE resource_type = ? AND created_at > ?
				UNION SELECT biz_key FROM release_tasks WHERE resource_type = ? AND status IN ('PENDING','RETRY','MANUAL')
				UNION SELECT h.biz_key FROM order_holds h JOIN orders o ON o.order_no = h.order_no
					WHERE h.resource_type = ? AND h.qty > h.released + h.deducted AND o.status = 'PENDING'
				UNION SELECT biz_key FROM recon_diffs WHERE resource_type = ? AND check_name IN (?, ?) AND status <> 'RESOLVED'`,
				r.typ, r.s.Now().Add(-heldCheckQuiet), r.typ, r.typ, r.typ, CheckHeld, CheckUnchecked).Scan(&keys).Error
			if err != nil {
				return err
			}
		}
		recent := r.s.Now().Add(-r.placeCallWindow())
		for part := range slices.Chunk(keys, closeChunk) {
			pending, tasks, err := r.s.expectedHeld(tx, []ResourceType{r.typ}, part)
			if err != nil {
				return err
			}
			for _, key := range part {
				k := ResourceKey{r.typ, key}
				v.expected[key] = pending[k].Q + tasks[k].Q
			}
			var busy []string
			err = tx.Raw(`SELECT biz_key FROM release_tasks WHERE resource_type = ? AND biz_key IN ? AND status IN ('PENDING','RETRY')
					AND (lease_until IS NOT NULL OR attempts > 0 OR trigger_type = ?)
				UNION SELECT h.biz_key FROM order_holds h JOIN orders o ON o.order_no = h.order_no
					WHERE h.resource_type = ? AND h.biz_key IN ? AND o.status = 'PENDING' AND o.created_at > ?`,
				r.typ, part, TriggerPlaceAborted, r.typ, part, recent).Scan(&busy).Error
			if err != nil {
				return err
			}
			for _, k := range busy {
				v.busy[k] = true
			}
		}
		return nil
	})
	if err != nil {
		return keyView{}, fmt.Errorf("reconcile %s: %w", r.typ, err)
	}
	return v, nil
}

// placeCallWindow bounds how long after its order commits a placement's
// lock calls may still reach the service: each call's timeout, twice (the
// client's own resend of a request on a closed connection), and a margin.
func (r *remoteResource) placeCallWindow() time.Duration {
	return 2*r.client.Timeout() + 5*time.Second
}

// heldCheck is what one run's HELD check of a remote type covered: the
// keys it compared, and those it skipped with the reason of each.
type heldCheck struct {
	compared []string
	skipped  map[string]SkipReason
	// notOffered: the service offers no GET /holds (404 for every key
	// asked), so the type has no HELD check; declared, not a skip. None of
	// its keys was compared, so every HELD ticket of it stays as it was.
	notOffered bool
}

// checkService is the HELD check: what the service says it holds of each
// key (GET /holds/{key}) against what unhold expects it to hold. The
// service cannot be read in unhold's snapshot, so the key's expectation is
// read before the calls and again after them; a key is compared only when
// both reads agree and neither saw a call of its under way: a release
// that landed between the reads, or a lock still on its way, is no diff.
// The keys it could not compare so are skipped as UNKNOWN_OUTCOME, and
// those the service did not answer for (logged) by what it did instead:
// their open tickets stay open until a run compares them. A service that
// offers no GET /holds has no HELD check (errNoHolds).
//
// before is the first read, of the keys in play (view), made on the run's
// ctx before any service was asked. Only the questions run on sctx, the
// services' share of the run's time: a question the time did not reach
// skips its key as NO_ANSWER, while unhold's own reads, the after-read
// too, run on ctx, whose end fails the run as any database error does.
func (r *remoteResource) checkService(ctx, sctx context.Context, before keyView) ([]Diff, *heldCheck, error) {
	hc := &heldCheck{skipped: map[string]SkipReason{}}
	var keys []string
	for k := range before.expected {
		if before.busy[k] {
			hc.skipped[k] = SkipUnknownOutcome
		} else {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	held, err := r.holds(sctx, keys, hc.skipped)
	if errors.Is(err, remote.ErrNoHolds) {
		// Nothing compared: a ticket of a service that stopped offering
		// GET /holds stays for a person to resolve.
		return nil, nil, errNoHolds
	}
	if err != nil {
		r.s.log.Warn("reconcile: the service did not answer for some keys; they are compared on a later run",
			slog.String("resource", string(r.typ)), slog.Any("err", err))
	}
	var odd []string
	for _, k := range keys {
		h, ok := held[k]
		switch {
		case !ok:
		case h != before.expected[k]:
			odd = append(odd, k)
		default:
			hc.compared = append(hc.compared, k)
		}
	}
	if len(odd) == 0 {
		return nil, hc, nil
	}
	after, err := r.view(ctx, odd)
	if err != nil {
		return nil, nil, err
	}
	var diffs []Diff
	for _, k := range odd {
		if after.busy[k] || after.expected[k] != before.expected[k] {
			hc.skipped[k] = SkipUnknownOutcome
			continue
		}
		hc.compared = append(hc.compared, k)
		diffs = append(diffs, Diff{Resource: r.typ, Key: k, Check: CheckHeld, Expected: before.expected[k], Actual: held[k]})
	}
	return diffs, hc, nil
}

// holds asks the service what it holds of each key, remoteCalls at a time,
// and returns the answers it got; each key it got none for goes into
// skipped with the reason (skipReason), and the error says how many keys
// were not answered, and why the first was not. ErrNoHolds: the service
// offers no GET /holds — every key asked got a 404 and none anything
// else. Once any key got another answer the service evidently offers the
// endpoint, and a 404 is a refusal of its key (the protocol answers an
// unknown key held 0, never 404): were one 404 taken for "not offered",
// a service could hide every other key's diff by 404-ing one.
func (r *remoteResource) holds(ctx context.Context, keys []string, skipped map[string]SkipReason) (map[string]int64, error) {
	out := make(map[string]int64, len(keys))
	var mu sync.Mutex
	var failures atomic.Int64
	errs := make([]error, len(keys))
	each(len(keys), func(i int) {
		// A service that failed a whole wave of questions is not asked
		// the rest: a hanging one would cost keys × timeout / remoteCalls.
		// A 404 is a quick answer, not a failure: were a wave of them to
		// stop the questions, a service 404-ing its first keys would have
		// the type read "not offered" as surely as 404-ing them all.
		if failures.Load() >= remoteCalls || ctx.Err() != nil {
			errs[i] = errNotAsked
			return
		}
		h, err := r.client.Holds(ctx, keys[i])
		if err != nil {
			if !errors.Is(err, remote.ErrNoHolds) {
				failures.Add(1)
			}
			errs[i] = err
			return
		}
		mu.Lock()
		out[keys[i]] = h.Held
		mu.Unlock()
	})
	asked, notFound := 0, 0
	for _, err := range errs {
		if !errors.Is(err, errNotAsked) {
			asked++
		}
		if errors.Is(err, remote.ErrNoHolds) {
			notFound++
		}
	}
	if notFound > 0 && notFound == asked {
		return nil, remote.ErrNoHolds
	}
	var first error
	failed := 0
	for i, err := range errs {
		if err == nil {
			continue
		}
		failed++
		reason := skipReason(err)
		if errors.Is(err, remote.ErrNoHolds) {
			// Other keys got other answers: the endpoint is there, and
			// this 404 refuses the key.
			reason = SkipRefused
			err = fmt.Errorf("404 for %q, where other keys got other answers", keys[i])
		}
		skipped[keys[i]] = reason
		if !errors.Is(err, errNotAsked) {
			first = cmp.Or(first, err)
		}
	}
	if failed > 0 {
		return out, fmt.Errorf("%d of %d keys not answered, the first: %w", failed, len(keys), first)
	}
	return out, nil
}

// skipReason is why a GET /holds that failed with err left its key
// unchecked: the service refused it (4xx), answered for another key, or
// answered what proves nothing; or no answer came (timeout, connection,
// busy, not asked).
func skipReason(err error) SkipReason {
	var re *remote.Error
	switch {
	case !errors.As(err, &re):
		return SkipNoAnswer
	case re.Class == remote.ClassRejected:
		return SkipRefused
	case errors.Is(err, remote.ErrOtherKey):
		return SkipOtherKey
	case re.Class == remote.ClassProtocol:
		return SkipUnparseable
	}
	return SkipNoAnswer
}

// each runs fn(0) … fn(n-1), remoteCalls at a time, and returns when all
// have returned.
func each(n int, fn func(i int)) {
	var wg sync.WaitGroup
	slots := make(chan struct{}, remoteCalls)
	for i := range n {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			fn(i)
		})
	}
	wg.Wait()
}

// errNoHolds says a service offers no GET /holds: no key of its type was
// compared.
var errNoHolds = errors.New("the service offers no GET /holds")

// errNotAsked is a key holds did not ask about: its service had failed a
// wave of questions already, or the run's time for services was up.
var errNotAsked = errors.New("not asked")

// reconcileServices runs every remote type's HELD check (checkService),
// each with reads of its own: a service is not asked inside a snapshot. It
// returns the diffs found and, by type, what each check covered. Every
// type's keys and expectations are read on ctx before any service is
// asked, and only the questions run on sctx (the services' share of the
// run's time): were a type's first read made after an earlier type's
// hanging service had used that time up, it would fail, and none of the
// type's keys would be known to skip — no streak, no UNCHECKED ticket,
// run after run.
func (s *Store) reconcileServices(ctx, sctx context.Context) ([]Diff, map[ResourceType]*heldCheck, error) {
	var rs []*remoteResource
	var before []keyView
	for _, t := range s.types {
		r, ok := s.remotes[t]
		if !ok {
			continue
		}
		v, err := r.view(ctx, nil)
		if err != nil {
			return nil, nil, err
		}
		rs = append(rs, r)
		before = append(before, v)
	}
	var all []Diff
	checks := map[ResourceType]*heldCheck{}
	for i, r := range rs {
		d, hc, err := r.checkService(ctx, sctx, before[i])
		switch {
		case errors.Is(err, errNoHolds):
			checks[r.typ] = &heldCheck{notOffered: true}
			continue
		case err != nil:
			return nil, nil, err
		}
		all = append(all, d...)
		checks[r.typ] = hc
	}
	return all, checks, nil
}
